#pragma once
// The heavy, recent part of a run at one step: per policy, the latest
// attention captures of each layer and the latest cache state (positions and
// scores) of each layer read, as much of it as the views draw (held_state.h).
// The live analyzer keeps one at the newest step; to show an earlier step, the
// app builds one from the recording's lines around it (load_capture_window), so
// seeking costs a few lines read, not memory for every step.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "core/analysis/held_state.h"
#include "core/policy/policy.h"
#include "core/runtime/step_record.h"

namespace h2o {

struct RecordingHeader;
struct RecordingIndex;

struct StepCapture {
  int64_t step = 0;
  AttentionCapture capture;
};

class CaptureWindow {
 public:
  // Captures kept per layer: the watched layer's feed the heatmap's rows, the
  // others (every layer, every few steps) the model view.
  static constexpr size_t kWatchedKept = 48;
  static constexpr size_t kOtherKept = 8;
  // Steps a window read back from a recording covers: as many captures of
  // every layer as the live window keeps (the other layers come every 8th step).
  static constexpr int kSteps = 64;

  // `policies`: the run's, whose sinks each state keeps. `whole_entries`: a
  // state's KV head holding at most this many entries is kept whole (held_state.h).
  explicit CaptureWindow(const std::vector<PolicyConfig>& policies = {},
                         size_t whole_entries = HeldState::kWholeEntries);
  // A step's captures and states, in step order.
  void add(const StepRecord& record);
  // A state read at an earlier step than those added (the full cache's are sparse).
  void add_state(int session, int64_t step, const LayerState& state);
  int64_t last_step() const { return last_step_; }
  bool empty() const { return last_step_ < 0; }
  // The layer of the newest step's first capture (the watched layer), -1 if none.
  int watched_layer() const { return watched_layer_; }

  struct PolicyCaptures {
    std::map<int, std::deque<StepCapture>> attention;  // per layer, oldest first
    std::map<int, std::shared_ptr<const HeldState>> states;  // latest per layer
    int64_t share_step = -1;         // the watched layer's top-k shares, as of this step
    std::vector<float> top_share;
  };
  const PolicyCaptures& policy(size_t i) const;
  size_t policies() const { return policies_.size(); }
  const std::deque<StepCapture>* captures(size_t policy, int layer) const;
  // The latest state of `layer` read, as held (its kept entries and rank curves); null if none.
  const HeldState* state(size_t policy, int layer) const;

 private:
  void hold(size_t policy, int64_t step, const LayerState& state);

  std::vector<PolicyCaptures> policies_;
  std::vector<int> sinks_;  // per policy
  size_t whole_entries_;
  int64_t last_step_ = -1;
  int watched_layer_ = -1;
};

// The window at `step` read back from a recording: the lines of the
// CaptureWindow::kSteps steps up to `step`, and for each session the latest
// state read at or before it (the index says where) — the same window the live
// analyzer had at that step. Empty if the recording does not hold `step`.
// Throws Error naming the file and step.
// `whole_entries`: as the live window's (Analyzer::state_whole_entries).
CaptureWindow load_capture_window(const std::string& path, const RecordingIndex& index, int version,
                                  const RecordingHeader& header, int64_t step,
                                  size_t whole_entries = HeldState::kWholeEntries);

}  // namespace h2o
