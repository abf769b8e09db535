#include "core/cpu/low_bit_attention.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu/cpu_ops.h"

namespace h2o::cpu {
namespace {
constexpr int kTileSlots = 32;  // 32 slots x 128 channels x 4 bytes: 16 KiB, half an L1

// Calls fn(first, count) for tiles of at most kTileSlots f16 slots below
// `slots`: the sinks, then the residual (the quantized run between them is
// read from its codes in one piece).
template <class Fn>
void for_each_f16_tile(const LowBitHead& head, int slots, Fn fn) {
  const int edges[] = {0, head.sinks(), head.sinks() + head.quantized(), slots};
  for (int part : {0, 2}) {
    const int begin = std::min(edges[part], slots), end = std::min(edges[part + 1], slots);
    for (int first = begin; first < end; first += kTileSlots) fn(first, std::min(kTileSlots, end - first));
  }
}

}  // namespace

void low_bit_attention(LowBitHead& head, int head_dim, float scale, std::span<const QueryRow> rows) {
  int slots = 0;
  for (const QueryRow& q : rows) slots = std::max(slots, q.visible);
  std::vector<float> tile(size_t(kTileSlots) * head_dim);
  // Scores: q . k over each tile of f16 keys, and the quantized run from its codes.
  for_each_f16_tile(head, slots, [&](int first, int count) {
    head.read_keys(first, count, tile.data());
    for (const QueryRow& q : rows) {
      const int seen = std::min(count, q.visible - first);
      if (seen > 0) dot_rows(q.probs + first, q.query, tile.data(), seen, head_dim);
    }
  });
  head.score_quantized(rows);
  for (const QueryRow& q : rows) {
    for (int j = 0; j < q.visible; ++j) q.probs[j] *= scale;
    softmax(q.probs, q.visible);
    std::memset(q.out, 0, size_t(head_dim) * sizeof(float));
  }
  // Outputs: the probabilities' weighted sum of the values, the same way.
  for_each_f16_tile(head, slots, [&](int first, int count) {
    head.read_values(first, count, tile.data());
    for (const QueryRow& q : rows) {
      const int seen = std::min(count, q.visible - first);
      if (seen > 0) weighted_rows_add(q.out, q.probs + first, tile.data(), seen, head_dim);
    }
  });
  head.add_quantized_values(rows);
}

}  // namespace h2o::cpu
