#pragma once
// Attention over a LowBitHead, a tile of 32 slots at a time for every query
// row of the step while the tile sits in L1: the f16 slots read back, the
// quantized ones used straight from their codes (kvq::dot_codes, add_codes),
// so no dequantized copy of the cache is ever made.
#include <span>

#include "core/cpu/low_bit_head.h"

namespace h2o::cpu {

// One query row: its rotated query, the probabilities it gets over the
// `visible` first slots (written here), and its output (written here).
struct QueryRow {
  const float* query;
  float* probs;
  float* out;
  int visible;
};

void low_bit_attention(LowBitHead& head, int head_dim, float scale, std::span<const QueryRow> rows);

}  // namespace h2o::cpu
