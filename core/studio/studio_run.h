#pragma once
// One run of the app, in plain C++ (the app's worker adds only threads,
// timers and signals): a live run — the engine, what each step reads out
// (capture_schedule.h) and the spool every step is recorded to — or a replay
// of a recording; either way the loop (run_loop.h) that feeds the Analyzer,
// the timeline over what was seen (timeline.h) and what the exports need
// (run_export.h). What stepping has to say comes back as plain text in a
// StepResult; the worker turns it into signals.
//
// The spool is the run's own temporary file: it goes when the run closes.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/analysis/analyzer.h"
#include "core/recording/capture_schedule.h"
#include "core/recording/recording.h"
#include "core/runtime/run_loop.h"
#include "core/runtime/step_pipeline.h"
#include "core/studio/needle_source.h"
#include "core/studio/run_export.h"
#include "core/studio/studio_setup.h"
#include "core/studio/synthetic_steps.h"
#include "core/studio/timeline.h"

namespace h2o {

// What stepping said, in a user's words, for the front end to pass on.
struct StepResult {
  bool stepped = false;               // a step was taken (several: at least one)
  std::string end_reason;             // the run has nothing more to give: why ("replay finished", ...)
  std::string failure;                // a step failed (the run should pause): why
  std::vector<std::string> warnings;  // sessions that stopped, the recording that stopped, a step not read back
  std::string banner;                 // the recording stopped: what stays said until the run is replaced
};

// Where a run's time has gone so far, stage by stage (h2o-bench-studio's table).
struct PipelineTimes {
  int64_t steps = 0, snapshots = 0;
  double source_s = 0;    // the source's steps: the engine's, a replay's reads, the synthetic source's
  double history_s = 0;   // the analyzer writing the whole history (stream_history.h)
  double analyzer_s = 0;  // the rest of the analyzer: curves, score histories, the capture window
  double snapshot_s = 0;  // snapshots built (snapshot())
  double encode_s = 0;    // the recording spool: steps to text (and their probabilities rounded as it keeps them)
  double write_s = 0;     // the recording spool: text to the file
  int64_t recording_bytes = 0;
  int64_t thinned_steps = 0;  // steps the pipeline thinned (step_pipeline.h)
  // The needle's asks (needle_source.h): how many, their seconds (within source_s), the last one's forks' KV bytes.
  int64_t asks = 0;
  double ask_s = 0;
  int64_t ask_kv_bytes = 0;
};

// How a run names itself: a title, one line of details, the weights' type mix ("Q4_K_M"; "replay").
struct RunDescription {
  std::string title, details, types;
};

// What a replay opens on: the view and the settings it was recorded with, and its length.
struct ReplayOpening {
  int layer = 0, head = -1;
  StudioConfig settings;  // as recorded; for older files, what the panes say of themselves
  int64_t steps = 0;
  StepResult first;  // the first step, read on opening (older files name no view: its watched layer is theirs)
};

class StudioRun {
 public:
  // A live run: a fresh engine on `inputs` and `backend`, every step recorded
  // to a new file at `spool_path` (up to `recording_limit` bytes; 0: no
  // limit). `view`: the layer it watches (clamped to the model's) and the
  // head, which a replay of its recording opens on. Throws Error (or
  // std::bad_alloc); nothing is left behind then.
  static std::unique_ptr<StudioRun> live(const StudioConfig& config, const StudioInputs& inputs,
                                         std::unique_ptr<Backend> backend, const ViewSelection& view,
                                         const std::string& spool_path, int64_t recording_limit);
  // A replay of the recording at `path`. Throws Error.
  static std::unique_ptr<StudioRun> replay(const std::string& path);
  // A run fed by any source of steps, recorded to a spool as a live run is:
  // `make_source` gets the run's capture schedule (which apply_view moves)
  // and returns the source with the header of its shape and panes.
  struct MadeSource {
    std::unique_ptr<StepSource> source;
    RecordingHeader header;
  };
  static std::unique_ptr<StudioRun> from_source(const std::function<MadeSource(const StudioCaptureSchedule&)>& make_source,
                                                const ViewSelection& view, const std::string& spool_path,
                                                int64_t recording_limit);
  // h2o-bench-studio's and the tests' run: steps of a real shape and policy
  // mix at no model cost (synthetic_steps.h). The app offers only live runs and replays.
  static std::unique_ptr<StudioRun> synthetic(const SyntheticStepsSpec& spec, const ViewSelection& view,
                                              const std::string& spool_path, int64_t recording_limit);
  ~StudioRun();
  StudioRun(const StudioRun&) = delete;
  StudioRun& operator=(const StudioRun&) = delete;

  bool is_replay() const { return replay_ != nullptr; }
  bool is_live() const { return engine_ != nullptr; }
  // Whether it can step: false once closed.
  bool runs() const { return loop_ != nullptr; }
  // Drops the engine, the replay's reader and the spool (a new model is on
  // its way): nothing more runs or is read back, and what was seen stays on show.
  void close();

  // What the window's title and status bar say of it (before it is closed).
  RunDescription describe() const;
  // Call once, right after replay(): reads the first step. `controls`: the
  // settings shown until now, which a file that kept none changes only in what its panes say.
  ReplayOpening replay_opening(const StudioConfig& controls);
  const std::string& replay_path() const { return replay_path_; }

  // One new step from the engine or the recording. Never throws: a failure is said in the result.
  StepResult step();

  // ---- the sinks beside the engine (step_pipeline.h) ----
  // From now on a live (or synthetic) run's sinks — the spool, the analyzer —
  // run on a thread of their own: step() hands the step over and returns.
  // What the run shows is then the newest step they have taken in; the
  // timeline, the exports and settle() first wait for the rest. Replays
  // stay as they are (their pace reads the analyzer each step).
  // run_beside() does so where the engine runs on a device (or the steps are
  // synthetic), with thinning; on the CPU backend, whose engine already uses
  // the cores the sinks would run on, the sinks stay in the engine's loop.
  void run_beside(const PipelineOptions& options);
  void run_beside();
  // Whether the sinks run beside the engine (run_beside started them so).
  bool beside() const { return pipeline_ != nullptr; }
  // Beside the engine, `after` runs on the sinks' thread after each step they
  // take in (the window's snapshots: StepPipeline::set_after_step); nothing
  // where the sinks are in the engine's loop.
  void after_each_step_beside(std::function<void()> after);
  // Waits until the sinks have every step taken so far (before a paused
  // frame, a seek, an export). Returns a failure to say ("": none).
  std::string settle();
  // Whether the sinks are behind (the window builds fewer snapshots then: snapshots thin first).
  bool behind() const { return pipeline_ && pipeline_->behind(); }
  // Reads a replay on to `step` (or its end) without a snapshot of each step,
  // skimming the steps it passes (h2o::read_replay_to); nothing for a live run.
  StepResult read_replay_to(int64_t step);

  // ---- the timeline: which step is shown (timeline.h) ----
  bool has_steps() const;
  int64_t latest_step() const;
  bool following() const { return timeline_.following(); }
  void follow() { timeline_.follow(); }
  // Shows `step` (at or past the newest: follows). Returns a warning ("" : none).
  std::string seek(int64_t step);
  // The step before the shown one (not before the first); -1 with no steps.
  int64_t step_before() const;
  // The shown step one on through the history. Returns a warning ("" : none).
  std::string advance();
  // One step forward: through the history from the shown step, else a new step.
  StepResult step_forward();
  // A live run cannot rewind its engine: it plays on from the newest step; a replay from the step shown.
  void start_playing();

  // ---- a replay's pace (ReplayPace) ----
  double engine_seconds_at_shown() const;
  // Whether a paced replay may show its next step once the pace reached
  // `engine_seconds`: through the history, by the next step's recorded time;
  // at the newest step, by the newest one's (the next is not read yet).
  bool next_step_due(double engine_seconds) const;

  // The snapshot at the shown step, as `view` looks at it.
  StudioSnapshot snapshot(ViewSelection view) const;
  // The view changed: the clicked position's scores are kept, a live run reads out the layer shown.
  void apply_view(const ViewSelection& view);
  // A typed prompt into a live stream (Engine::queue_turn), after the current turn.
  // Returns what to say ("Queued: …"); throws Error.
  std::string queue_prompt(const std::string& text);

  // ---- the needle (needle_source.h), live runs ----
  // Plants a needle into the stream when the current turn ends; returns what to say. Throws Error.
  std::string plant_needle(const std::string& text, const std::string& question = {}, const std::string& answer = {});
  // The next step is followed by an ask (every pane answers from a fork of its cache). Throws Error.
  void ask_after_next_step();
  // An ask every `steps` steps once the needle is fed (0: none).
  void ask_every(int64_t steps);

  // The run as the exports see it now; `state`: "running" or "paused".
  RunExport run_export(const std::string& state, const ViewSelection& view) const;
  // One line of memory figures, "name value" pairs (scripts/soak_studio.sh
  // reads them), `seconds` since the app began sampling; no newline.
  std::string stats_line(double seconds) const;
  // Where the run's time has gone so far.
  PipelineTimes pipeline_times() const;

 private:
  StudioRun() = default;
  // Where the timeline reads earlier steps from: the spool, or the replay's file.
  TimelineFile timeline_file() const;
  // The one warning and banner when the spool stops recording, and when its
  // ring turns (the first time a warning, each time the banner: from which step it keeps).
  void tell_spool_stop(StepResult& result);
  // The analyzer, the spool and the loop of a run fed by `source` (live or any other).
  void start_recording(RecordingHeader header, StepSource& source, const std::string& spool_path,
                       int64_t recording_limit);

  StudioCaptureSchedule schedule_;           // what each live step reads out
  std::unique_ptr<Engine> engine_;           // live runs
  std::unique_ptr<EngineSource> engine_source_;
  std::unique_ptr<NeedleSource> needle_source_;  // live runs: the engine's steps, a needle planted and asked for
  std::unique_ptr<StepSource> other_source_;  // from_source's
  std::unique_ptr<RecordingReader> replay_;  // replays
  std::string replay_path_;
  int64_t recorded_steps_ = 0;
  std::unique_ptr<Analyzer> analyzer_;
  std::unique_ptr<RecordingWriter> spool_;   // live runs: every step, up to its limit
  std::string spool_path_;
  bool spool_stop_told_ = false;
  int64_t spool_turns_told_ = 0;  // the spool's ring turns said so far
  std::unique_ptr<RunLoop> loop_;
  nlohmann::json manifest_;
  RunInfo run_info_;  // live runs: studio_run_info
  Timeline timeline_;
  // Held by the sinks while they take a step in, and by every reader of what they hold.
  mutable std::mutex state_;
  std::unique_ptr<StepPipeline> pipeline_;  // run_beside's
  mutable double snapshot_s_ = 0;
  mutable int64_t snapshots_ = 0;
};

}  // namespace h2o
