#include "core/cpu/low_bit_attention.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu/cpu_ops.h"

namespace h2o::cpu {
namespace {
constexpr int kTileSlots = 32;  // 32 slots x 128 channels x 4 bytes: 16 KiB, half an L1
}

void low_bit_attention(LowBitHead& head, int head_dim, float scale, std::span<const QueryRow> rows) {
  int slots = 0;
  for (const QueryRow& q : rows) slots = std::max(slots, q.visible);
  std::vector<float> tile(size_t(kTileSlots) * head_dim);
  // Scores: q . k over each tile of keys.
  for (int first = 0; first < slots; first += kTileSlots) {
    const int count = std::min(kTileSlots, slots - first);
    head.read_keys(first, count, tile.data());
    for (const QueryRow& q : rows) {
      const int seen = std::min(count, q.visible - first);
      if (seen > 0) dot_rows(q.probs + first, q.query, tile.data(), seen, head_dim);
    }
  }
  for (const QueryRow& q : rows) {
    for (int j = 0; j < q.visible; ++j) q.probs[j] *= scale;
    softmax(q.probs, q.visible);
    std::memset(q.out, 0, size_t(head_dim) * sizeof(float));
  }
  // Outputs: the probabilities' weighted sum of each tile of values.
  for (int first = 0; first < slots; first += kTileSlots) {
    const int count = std::min(kTileSlots, slots - first);
    head.read_values(first, count, tile.data());
    for (const QueryRow& q : rows) {
      const int seen = std::min(count, q.visible - first);
      if (seen > 0) weighted_rows_add(q.out, q.probs + first, tile.data(), seen, head_dim);
    }
  }
}

}  // namespace h2o::cpu
