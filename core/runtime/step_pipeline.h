#pragma once
// A run's sinks (the recording spool, the analyzer) on a thread of their
// own, so that the engine hands each step over and goes on: on a GPU the
// device keeps decoding while the CPU records and analyses the step before.
//
// Where the sinks cannot keep up, steps are thinned by one deterministic
// rule, never a token, an eviction or a pane's numbers: once `thin_at` steps
// wait, a step handed over keeps only its watched layer's capture (the first
// one) and is marked `thinned`, so its recording says which detail is
// missing. (Snapshots thin first: the window asks behind() and builds
// fewer meanwhile, SnapshotCadence.) Only when `capacity` steps wait does the
// engine wait too. With thinning off every step keeps everything: the engine
// waits for the sinks instead (tests compare).
//
// The steps reach the sinks through the owner's RunLoop (RunLoop::deliver:
// its prepare function, then every sink), under `state`, a mutex the owner
// also takes whenever it reads what the sinks hold, so a reader sees whole steps only.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "core/runtime/run_loop.h"

namespace h2o {

struct PipelineOptions {
  bool thinning = true;
  size_t thin_at = 16;    // steps waiting from which a step handed over is thinned (0: every step)
  size_t capacity = 256;  // steps waiting at which the engine waits
};

class StepPipeline {
 public:
  // `loop` delivers each step to its sinks; it must outlive the pipeline.
  StepPipeline(RunLoop& loop, std::mutex& state, PipelineOptions options);
  // Finishes every step handed over, then stops the thread.
  ~StepPipeline();
  StepPipeline(const StepPipeline&) = delete;
  StepPipeline& operator=(const StepPipeline&) = delete;

  // Hands a step over (thinning it when the sinks are behind); waits only when `capacity` steps wait.
  // Rethrows, once, what a sink threw since the last call.
  void push(StepRecord record);
  // Waits until every step handed over has reached every sink. Rethrows as push() does.
  void drain();
  // Whether the sinks are behind: thin_at / 2 steps or more wait (snapshots thin first).
  bool behind() const;
  int64_t thinned_steps() const;
  // `after` runs on the sinks' thread after each step they take in, outside
  // `state` (the window builds its snapshots there, so the engine never
  // does); empty: none. Setting waits for a call under way to end.
  void set_after_step(std::function<void()> after);

 private:
  void run();
  void rethrow_failure();

  RunLoop& loop_;
  std::mutex& state_;
  PipelineOptions options_;
  mutable std::mutex queue_mutex_;
  std::condition_variable wake_, room_, idle_;
  std::deque<StepRecord> queue_;
  bool busy_ = false, stopping_ = false;
  int64_t thinned_ = 0;
  std::exception_ptr failure_;
  std::mutex after_mutex_;  // held while after_ runs
  std::function<void()> after_;
  std::thread thread_;
};

// Leaves out every capture but the first (the watched layer's) and marks the step thinned.
void thin_step(StepRecord& record);

}  // namespace h2o
