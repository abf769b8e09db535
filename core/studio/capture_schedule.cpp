#include "core/studio/capture_schedule.h"

namespace h2o {

CapturePlan StudioCaptureSchedule::plan(int64_t step, const Session& session) const {
  const SessionCache& cache = session.cache();
  int64_t held = 0;
  for (int h = 0; h < cache.kv_heads(); ++h) held += cache.size(layer_, h);
  return plan_for(step, cache.layers(), held);
}

CapturePlan StudioCaptureSchedule::plan_for(int64_t step, int layers, int64_t held) const {
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
      other.max_keys = kAllLayersKeys;
      other.top_k = 0;
      plan.attention.push_back(other);
    }
  }
  // Scores every step while the layer holds little, less often as it grows.
  if (step % (1 + held / 1024) == 0) plan.layer_states.push_back(layer_);
  return plan;
}

}  // namespace h2o
