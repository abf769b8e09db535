#include "core/policy/kept_set.h"

#include <algorithm>
#include <numeric>

#include "core/policy/cut_shape.h"

namespace h2o {

std::vector<int> select_kept(const EvictionRule& rule, std::span<const int32_t> positions,
                             std::span<const float> scores) {
  const int n = int(positions.size());
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  if (!rule.cut_due(n)) return all;

  // Sinks are the first stream positions, never evicted, so they sit in the
  // first slots; the recent tokens are the last slots.
  int sinks_present = 0;
  while (sinks_present < n && positions[size_t(sinks_present)] < rule.sinks) ++sinks_present;
  const CutShape cut = cut_shape(n, sinks_present, rule.recent, rule.by_score);

  std::vector<int> kept(all.begin(), all.begin() + cut.sinks);
  if (cut.by_score > 0) {
    // The highest survival keys among the middle slots (score, then the more
    // recent slot): a strict order, so the kept set is unique. Partition it
    // from the few evicted (linear time; a cut usually evicts one slot per
    // step), then keep the middle in slot order minus those.
    std::vector<int> middle(all.begin() + cut.sinks, all.begin() + cut.recent_begin);
    const auto survives_first = [&](int a, int b) {
      return survival_key(scores[size_t(a)], a) > survival_key(scores[size_t(b)], b);
    };
    std::nth_element(middle.begin(), middle.begin() + cut.by_score, middle.end(), survives_first);
    std::vector<int> evicted(middle.begin() + cut.by_score, middle.end());
    std::sort(evicted.begin(), evicted.end());
    size_t next_evicted = 0;
    for (int slot = cut.sinks; slot < cut.recent_begin; ++slot) {
      if (next_evicted < evicted.size() && evicted[next_evicted] == slot) ++next_evicted;
      else kept.push_back(slot);
    }
  }
  for (int i = cut.recent_begin; i < n; ++i) kept.push_back(i);
  return kept;
}

}  // namespace h2o
