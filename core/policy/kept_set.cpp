#include "core/policy/kept_set.h"

#include <algorithm>
#include <numeric>

namespace h2o {

std::vector<int> select_kept(const EvictionRule& rule, std::span<const int32_t> positions,
                             std::span<const float> scores) {
  const int n = int(positions.size());
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  if (!rule.evicts() || n <= rule.budget + rule.slack) return all;

  // Sinks are the first stream positions, never evicted, so they sit in the
  // first slots; the recent tokens are the last slots.
  int sinks = 0;
  while (sinks < n && positions[size_t(sinks)] < rule.sinks) ++sinks;
  const int recent_begin = std::max(sinks, n - rule.recent);

  std::vector<int> kept(all.begin(), all.begin() + sinks);
  if (rule.by_score > 0 && recent_begin > sinks) {
    // The highest scores among the middle slots; ties go to the more recent
    // token. A strict order, so the kept set is unique: partition it from
    // the few evicted (linear time; a cut usually evicts one slot per step),
    // then keep the middle in slot order minus those.
    std::vector<int> middle(all.begin() + sinks, all.begin() + recent_begin);
    const int h = std::min<int>(rule.by_score, int(middle.size()));
    const auto better = [&](int a, int b) {
      if (scores[size_t(a)] != scores[size_t(b)]) return scores[size_t(a)] > scores[size_t(b)];
      return a > b;
    };
    std::nth_element(middle.begin(), middle.begin() + h, middle.end(), better);
    std::vector<int> evicted(middle.begin() + h, middle.end());
    std::sort(evicted.begin(), evicted.end());
    size_t next_evicted = 0;
    for (int slot = sinks; slot < recent_begin; ++slot) {
      if (next_evicted < evicted.size() && evicted[next_evicted] == slot) ++next_evicted;
      else kept.push_back(slot);
    }
  }
  for (int i = recent_begin; i < n; ++i) kept.push_back(i);
  return kept;
}

}  // namespace h2o
