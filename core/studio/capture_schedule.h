#pragma once
// What the app reads out of each step (and so what its recordings hold): the
// watched layer's attention of every query head — the step's last row, the
// first and the latest keys — with each head's top-k share, and, every few
// steps, that layer's positions and scores; and every kAllLayersEvery steps a
// trimmed capture of every other layer (all heads, the last row, the first and
// the latest kAllLayersKeys keys), so that a recording or a paused run can
// show any layer and head, and the model view all of them. Reading the scores
// less often as the caches grow keeps a long full-cache run's recording small.
#include <cstdint>

#include "core/runtime/engine.h"

namespace h2o {

// Attention keys kept per KV head of the watched layer (the first kRecordedFirstKeys and the latest rest).
inline constexpr int kRecordedKeys = 192;
inline constexpr int kRecordedFirstKeys = 8;
// Every other layer, every kAllLayersEvery steps: this many keys per KV head.
inline constexpr int kAllLayersEvery = 8;
inline constexpr int kAllLayersKeys = 48;
// The k of the sparsity meter: share of attention on the top-k keys.
inline constexpr int kSparsityTopK = 8;

class StudioCaptureSchedule final : public CaptureSchedule {
 public:
  explicit StudioCaptureSchedule(int layer = 0) : layer_(layer) {}
  int layer() const { return layer_; }
  void set_layer(int layer) { layer_ = layer; }
  CapturePlan plan(int64_t step, const Session& session) const override;
  // The same plan for a step source that has no Session (the synthetic one):
  // a model of `layers` layers whose watched layer holds `held` tokens over all its KV heads.
  CapturePlan plan_for(int64_t step, int layers, int64_t held) const;

 private:
  int layer_;
};

}  // namespace h2o
