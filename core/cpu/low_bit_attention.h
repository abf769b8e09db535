#pragma once
// Attention over a LowBitHead for every query row of the step: the f16 slots
// (sinks, residual) read back a tile of 32 at a time while the tile sits in
// L1, the quantized run used straight from its codes (kvq::dot_code_rows,
// add_value_rows), so no dequantized copy of the cache is ever made.
#include <span>

#include "core/cpu/low_bit_head.h"

namespace h2o::cpu {

void low_bit_attention(LowBitHead& head, int head_dim, float scale, std::span<const QueryRow> rows);

}  // namespace h2o::cpu
