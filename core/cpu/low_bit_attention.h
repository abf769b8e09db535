#pragma once
// Attention over a LowBitHead: the keys, then the values, read back one tile
// of slots at a time and used by every query row of the step while the tile
// sits in L1, so no dequantized copy of the cache is ever made.
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
