#pragma once
// Which tokens a step's cut removed, in compact form: a position that left
// every (layer, KV head) at once — every eviction of StreamingLLM, most of
// any policy's at one layer — is one number, not layers x KV heads events.
#include <cstdint>
#include <vector>

namespace h2o {

// One token leaving one (layer, KV head): its stream position.
struct EvictionEvent {
  int layer = 0;
  int kv_head = 0;
  int32_t position = 0;
  bool operator==(const EvictionEvent&) const = default;
};

struct EvictionSummary {
  std::vector<int32_t> everywhere;      // left every (layer, KV head), ascending
  std::vector<EvictionEvent> by_head;   // the rest, ordered by (layer, KV head, position)

  // From one step's events (any order) of a model with layers x kv_heads heads.
  static EvictionSummary from_events(std::vector<EvictionEvent> events, int layers, int kv_heads);
  bool empty() const { return everywhere.empty() && by_head.empty(); }
  // The number of (layer, KV head, position) evictions it stands for.
  int64_t count(int layers, int kv_heads) const {
    return int64_t(everywhere.size()) * layers * kv_heads + int64_t(by_head.size());
  }
  bool operator==(const EvictionSummary&) const = default;
};

}  // namespace h2o
