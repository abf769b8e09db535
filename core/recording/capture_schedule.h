#pragma once
// What the app reads out of each step (and so what its recordings hold): the
// watched layer's attention of every query head — the step's last row, the
// first and the latest keys — with each head's top-k share, and, every few
// steps, that layer's positions and scores; and every kAllLayersEvery steps a
// trimmed capture of every other layer (all heads, the last row, the first and
// the latest keys), so that a recording or a paused run can show any layer
// and head, and the model view all of them.
//
// Scaled to the model, so that a step's recording stays small at any shape
// (h2o-bench-studio measures it): the other layers keep fewer keys once
// layers x heads grows past a demo model's (all_layers_keys), and the scores
// are read less often as the watched layer holds more (about
// kStateValuesPerStep values a step on average), which also keeps a long
// full-cache run's recording small.
#include <cstdint>

#include "core/runtime/engine.h"

namespace h2o {

// Attention keys kept per KV head of the watched layer (the first kRecordedFirstKeys and the latest rest).
inline constexpr int kRecordedKeys = 192;
inline constexpr int kRecordedFirstKeys = 8;
// Every other layer, every kAllLayersEvery steps: at most kAllLayersKeys keys per KV head.
inline constexpr int kAllLayersEvery = 8;
inline constexpr int kAllLayersKeys = 48;
// The keys per head of the other layers' captures for a model of `layers` x
// `heads` query heads (0: not known, the most): kAllLayersKeys while layers x
// heads is at most 512 (every Llama up to TinyLlama's 22 x 32 keeps 34 or
// more), fewer beyond, never below 16 (Llama-2-7B's 32 x 32: 24).
int all_layers_keys(int layers, int heads);
// The layer states' values a step, on average: a layer holding `held`
// tokens over its KV heads is read every 1 + held / kStateValuesPerStep steps.
inline constexpr int kStateValuesPerStep = 192;
// The k of the sparsity meter: share of attention on the top-k keys.
inline constexpr int kSparsityTopK = 8;

class StudioCaptureSchedule final : public CaptureSchedule {
 public:
  explicit StudioCaptureSchedule(int layer = 0) : layer_(layer) {}
  int layer() const { return layer_; }
  void set_layer(int layer) { layer_ = layer; }
  // The model's query heads (0: not known), which scale the other layers' captures.
  void set_heads(int heads) { heads_ = heads; }
  CapturePlan plan(int64_t step, const Session& session) const override;
  // The same plan for a step source that has no Session (the synthetic one):
  // a model of `layers` x `heads` whose watched layer holds `held` tokens over all its KV heads.
  CapturePlan plan_for(int64_t step, int layers, int heads, int64_t held) const;

 private:
  int layer_;
  int heads_ = 0;
};

}  // namespace h2o
