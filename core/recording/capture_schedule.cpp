#include "core/recording/capture_schedule.h"

#include <algorithm>

namespace h2o {

CapturePlan StudioCaptureSchedule::plan(int64_t step, const Session& session) const {
  const SessionCache& cache = session.cache();
  int64_t held = 0;
  for (int h = 0; h < cache.kv_heads(); ++h) held += cache.size(layer_, h);
  return plan_for(step, cache.layers(), heads_, held);
}

int all_layers_keys(int layers, int heads) {
  constexpr int64_t kValues = int64_t(kAllLayersKeys) * 512;  // per capture of every layer
  const int64_t heads_in_all = int64_t(layers) * heads;
  if (heads_in_all <= 0) return kAllLayersKeys;
  return int(std::clamp<int64_t>(kValues / heads_in_all, 16, kAllLayersKeys));
}

CapturePlan StudioCaptureSchedule::plan_for(int64_t step, int layers, int heads, int64_t held) const {
  CapturePlan plan;
  CaptureRequest attention;
  attention.layer = layer_;
  attention.head = kAllHeads;
  attention.rows = 1;
  attention.max_keys = kRecordedKeys;
  attention.keep_first = kRecordedFirstKeys;
  attention.top_k = kSparsityTopK;
  plan.attention.push_back(attention);
  if (step % kAllLayersEvery == 0) {
    for (int l = 0; l < layers; ++l) {
      if (l == layer_) continue;
      CaptureRequest other = attention;
      other.layer = l;
      other.max_keys = all_layers_keys(layers, heads);
      other.top_k = 0;
      plan.attention.push_back(other);
    }
  }
  // Scores every step while the layer holds little, less often as it grows.
  if (step % (1 + held / kStateValuesPerStep) == 0) plan.layer_states.push_back(layer_);
  return plan;
}

}  // namespace h2o
