#include "core/runtime/evictions.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace h2o {

EvictionSummary EvictionSummary::from_events(std::vector<EvictionEvent> events, int layers, int kv_heads) {
  std::sort(events.begin(), events.end(), [](const EvictionEvent& a, const EvictionEvent& b) {
    return std::tie(a.layer, a.kv_head, a.position) < std::tie(b.layer, b.kv_head, b.position);
  });
  std::map<int32_t, int> heads_left;  // a position leaves each head at most once per step
  for (const EvictionEvent& e : events) ++heads_left[e.position];
  EvictionSummary s;
  const int every = layers * kv_heads;
  for (const auto& [position, count] : heads_left)
    if (count == every) s.everywhere.push_back(position);
  for (const EvictionEvent& e : events)
    if (heads_left[e.position] != every) s.by_head.push_back(e);
  return s;
}

}  // namespace h2o
