#pragma once
// The app's timeline over a run, in plain C++ (the app's worker adds only
// threads, timers and signals). It shows the newest step (following) or a
// chosen earlier one (the cursor). For the cursor it reads the captures
// around that step back from the run's file — a live run's spool, or the
// replayed recording — through its step index (capture_window.h); the
// analyzer's whole history gives the rest. Stepping on from the cursor reads
// one more line; at the newest step the timeline follows again.
//
// Also here: a replay's pace (ReplayPace) and how often the worker ticks.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/analysis/analyzer.h"
#include "core/analysis/capture_window.h"
#include "core/recording/recording.h"

namespace h2o {

// Where the timeline reads earlier steps from.
struct TimelineFile {
  const RecordingIndex* index = nullptr;  // null: nothing to read back
  std::string path;
  int version = 2;
  RecordingWriter* spool = nullptr;  // a live run's: flushed before its lines are read
};

class Timeline {
 public:
  // The shown step; -1: the newest (following).
  int64_t cursor() const { return cursor_; }
  bool following() const { return cursor_ < 0; }
  // The captures around the cursor: null while following, or when they could not be read.
  const CaptureWindow* window() const { return window_.get(); }

  // Follows the newest step again, dropping what was read back.
  void follow();
  // Shows `step`, not before the analyzer's first; at or past its newest, follows.
  // Returns a warning when the captures could not be read back ("" when they were).
  std::string seek(const Analyzer& analyzer, const TimelineFile& file, int64_t step);
  // The step before the shown one (not before the first); -1 with no steps.
  int64_t step_before(const Analyzer& analyzer) const;
  // Whether a step forward moves through the history (else the run must step).
  bool behind(const Analyzer& analyzer) const { return cursor_ >= 0 && cursor_ < analyzer.latest_step(); }
  // The cursor one step on, its line read from the file; at the newest step
  // it follows again. Returns a warning as seek() does.
  std::string advance(const Analyzer& analyzer, const TimelineFile& file);

 private:
  std::string load_window(const Analyzer& analyzer, const TimelineFile& file);
  std::string read_failed(const std::exception& e) const;

  int64_t cursor_ = -1;
  std::unique_ptr<CaptureWindow> window_;  // the captures around the cursor
  std::unique_ptr<RecordingLines> lines_;  // reads the cursor's next lines
  int64_t lines_turns_ = 0;                // the spool's ring turns when lines_ was opened
};

// Reads a replay on until `analyzer` holds `step` (or the recording ends),
// one step at a time through `step_once` (the reader's next step into the
// analyzer; false at the end). The steps before `step` are skimmed
// (RecordingReader::skim_below) and the analyzer then gets the window of
// captures at its newest step read back whole, as a seek back to an earlier
// step reads it (load_capture_window): every picture and number as reading
// every step whole gives them, save the states of layers no longer read in
// that window. Several times faster. Throws what `step_once` and the reader throw.
void read_replay_to(RecordingReader& replay, Analyzer& analyzer, int64_t step, const std::function<bool()>& step_once);

// A replay at its recorded pace times a speed: a step shows once the wall
// time since Play, times the speed, has reached the engine time it was
// recorded at. Wall times are the caller's clock, in seconds.
class ReplayPace {
 public:
  void set_speed(double times) { times_ = times > 0 ? times : 0; }  // 0: as fast as it reads
  double speed() const { return times_; }
  bool paced() const { return times_ > 0; }
  // Play (or a new speed) from the step recorded at `engine_seconds`, at wall time `wall`.
  void start(double engine_seconds, double wall) {
    from_engine_ = engine_seconds;
    from_wall_ = wall;
  }
  // The engine time the shown steps may have reached at wall time `wall`.
  double target(double wall) const { return from_engine_ + (wall - from_wall_) * times_; }

 private:
  double times_ = 1, from_engine_ = 0, from_wall_ = 0;
};

// The worker's tick interval in ms: a paced replay ticks often and steps when
// its pace says so; a live run under a speed limit (steps a second) ticks
// once a step; anything else as often as the event loop lets it (0).
int tick_interval_ms(bool replay, const ReplayPace& pace, double speed_limit);

}  // namespace h2o
