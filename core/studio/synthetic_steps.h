#pragma once
// Step records of a real model's shape and a real policy mix at no model
// cost: what the app's pipeline (whole history, analyzer, snapshots, the
// recording spool) has to keep up with when a GPU serves, say, Llama-2-7B at
// 140-210 steps a second. h2o-bench-studio and the tests feed StudioRun from
// it; the app offers only live runs and replays.
//
// Shaped on what a trained model does (kjv-1M's captures), not on the
// random-weight synthetic models (whose H2O evicts everywhere at once):
//   - attention on the sinks, on a few heavy-hitter columns per KV head, and
//     along the recency diagonal, a little different for every query head;
//   - every (layer, KV head) cache cut by its policy's own rule and the one
//     cut every backend shares (select_kept), by scores that favour those
//     heavy hitters: so H2O and TOVA evict per head at their real rate (one
//     per head per step at slack 0, slack + 1 per head every slack + 1 steps
//     at a device's slack), StreamingLLM the same positions everywhere at
//     once, the full cache nothing;
//   - MT-Bench's rhythm: turns of a prompt (one prefill step) and an answer
//     (decode steps, the last with an end-of-sequence token);
//   - what each step reads out as the app's capture schedule asks.
// Deterministic: the same spec and schedule give the same records.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/recording/capture_schedule.h"
#include "core/recording/recording.h"
#include "core/runtime/run_loop.h"

namespace h2o {

struct SyntheticStepsSpec {
  std::string shape = "llama2-7b";    // a synthetic model shape (synthetic_shape): layers, heads, head size
  std::vector<PolicyConfig> policies;  // the panes, in order
  uint64_t seed = 1;
  double step_ms = 7.21;  // engine time each step records (a replay's pace): the H200's, four 7B panes
};

class SyntheticStepSource final : public StepSource {
 public:
  // `schedule` says what each step reads out; it must outlive the source
  // (StudioRun's own, which the view moves). Throws Error for an unknown shape.
  SyntheticStepSource(SyntheticStepsSpec spec, const StudioCaptureSchedule& schedule);
  ~SyntheticStepSource() override;
  // The header a recording of these steps has.
  RecordingHeader header() const;
  // The next step; the stream never ends.
  std::optional<StepRecord> next() override;
  std::string end_reason() const override { return "the synthetic stream ended"; }

 private:
  struct Pane;
  struct Turn {
    int prompt = 0, answer = 0;  // tokens of the prompt, steps of the answer
  };
  void start_turn();
  SessionRecord session_step(Pane& pane, const StepRecord& record, int fed_count);
  AttentionCapture capture(const Pane& pane, const CaptureRequest& request, int64_t query) const;
  LayerState layer_state(const Pane& pane, int layer, int64_t now) const;

  SyntheticStepsSpec spec_;
  ModelConfig shape_;
  const StudioCaptureSchedule& schedule_;
  std::vector<std::unique_ptr<Pane>> panes_;
  int64_t step_ = 0, seen_ = 0;
  int turn_index_ = -1, answer_left_ = 0;
  Turn turn_;
};

// The spec of `policies` (names, as the app's settings list them) at one
// budget and slack, split as the app splits them (studio_policies), with
// the H200's step time for the shape. Throws Error naming a bad setting.
SyntheticStepsSpec synthetic_steps_spec(const std::string& shape, const std::vector<std::string>& policies, int budget,
                                        int slack);

// The engine time per step that h2o-bench-studio's synthetic source records
// for a shape and a pane count (the H200's measured decode steps; 1 ms for
// shapes it has not measured).
double synthetic_step_ms(const std::string& shape, int panes);

}  // namespace h2o
