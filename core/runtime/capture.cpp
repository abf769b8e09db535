#include "core/runtime/capture.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace h2o {

int AttentionCapture::captured_heads(int head, int heads, int kv_heads) {
  return head == kAllHeads ? heads : head == kGroupMean ? kv_heads : 1;
}

int AttentionCapture::kv_head_of(int head, int c, int heads, int kv_heads) {
  const int group = heads / kv_heads;
  return head == kAllHeads ? c / group : head == kGroupMean ? c : head / group;
}

std::vector<int> kept_key_slots(int n, int max_keys, int keep_first) {
  std::vector<int> slots(size_t(std::max(n, 0)));
  std::iota(slots.begin(), slots.end(), 0);
  if (max_keys <= 0 || n <= max_keys) return slots;
  // Slot order is stream order: keep the first and the latest.
  const int first = std::clamp(keep_first, 0, max_keys);
  std::vector<int> kept(slots.begin(), slots.begin() + first);
  kept.insert(kept.end(), slots.end() - (max_keys - first), slots.end());
  return kept;
}

void add_top_k_share(std::span<const float> row, int k, double& sum, int& rows) {
  std::vector<float> sorted(row.begin(), row.end());
  const size_t top = std::min(sorted.size(), size_t(std::max(k, 0)));
  std::partial_sort(sorted.begin(), sorted.begin() + long(top), sorted.end(), std::greater<float>());
  const double total = std::accumulate(sorted.begin(), sorted.end(), 0.0);
  const double head_mass = std::accumulate(sorted.begin(), sorted.begin() + long(top), 0.0);
  if (total > 0) {
    sum += head_mass / total;
    ++rows;
  }
}

}  // namespace h2o
