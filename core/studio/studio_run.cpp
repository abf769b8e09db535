#include "core/studio/studio_run.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/process_memory.h"
#include "core/base/stopwatch.h"
#include "core/recording/step_payload.h"

namespace h2o {

std::unique_ptr<StudioRun> StudioRun::live(const StudioConfig& settings, const StudioInputs& inputs,
                                           std::unique_ptr<Backend> backend, const ViewSelection& view,
                                           const std::string& spool_path, int64_t recording_limit) {
  std::unique_ptr<StudioRun> run(new StudioRun());
  StudioConfig config = settings;
  config.capture_layer = std::clamp(view.layer, 0, inputs.model->config.n_layers - 1);
  run->schedule_.set_layer(config.capture_layer);
  run->schedule_.set_heads(inputs.model->config.n_heads);
  run->engine_ = make_studio_engine(config, inputs, std::move(backend));
  run->engine_source_ = std::make_unique<EngineSource>(*run->engine_, &run->schedule_);
  run->needle_source_ = std::make_unique<NeedleSource>(*run->engine_, *run->engine_source_);
  // Hashing is quick for small files and would stall the start of big ones.
  std::error_code ec;
  const auto size = std::filesystem::file_size(inputs.model_path, ec);
  run->manifest_ = describe_run(*run->engine_, studio_run_info(config, inputs, !ec && size < (64u << 20)));
  run->run_info_ = studio_run_info(config, inputs, false);
  const std::string mode = config.forced ? "forced" : "stream";
  run->manifest_["mode"] = mode;
  RecordingHeader header = make_header(*run->engine_, run->manifest_, mode);
  // What a replay restores: the view when recording began and the settings.
  header.view_layer = config.capture_layer;
  header.view_head = view.head;
  header.settings = studio_config_json(config);
  run->start_recording(std::move(header), *run->needle_source_, spool_path, recording_limit);
  return run;
}

void StudioRun::start_recording(RecordingHeader header, StepSource& source, const std::string& spool_path,
                                int64_t recording_limit) {
  analyzer_ = std::make_unique<Analyzer>(std::move(header));
  spool_path_ = spool_path;  // set first: a file half made still goes with the run
  spool_ = std::make_unique<RecordingWriter>(spool_path, analyzer_->header(), recording_limit);
  loop_ = std::make_unique<RunLoop>(source);
  // What is shown live is what a replay of the spool shows: probabilities as the recording keeps them.
  loop_->set_prepare(round_to_recorded);
  // Past its limit the spool keeps its newest steps and a checkpoint of the
  // whole history before them. Sinks take a step in their order: when the
  // spool writes a step, the analyzer holds every step before it.
  spool_->keep_newest([analyzer = analyzer_.get()](std::ostream& out) { analyzer->save_checkpoint(out); });
  loop_->add_sink(*spool_);
  loop_->add_sink(*analyzer_);
}

std::unique_ptr<StudioRun> StudioRun::from_source(const std::function<MadeSource(const StudioCaptureSchedule&)>& make_source,
                                                  const ViewSelection& view, const std::string& spool_path,
                                                  int64_t recording_limit) {
  std::unique_ptr<StudioRun> run(new StudioRun());
  run->schedule_.set_layer(std::max(0, view.layer));
  MadeSource made = make_source(run->schedule_);
  const int layer = std::clamp(view.layer, 0, made.header.layers - 1);
  run->schedule_.set_layer(layer);
  made.header.view_layer = layer;
  made.header.view_head = view.head;
  run->other_source_ = std::move(made.source);
  run->start_recording(std::move(made.header), *run->other_source_, spool_path, recording_limit);
  return run;
}

std::unique_ptr<StudioRun> StudioRun::synthetic(const SyntheticStepsSpec& spec, const ViewSelection& view,
                                                const std::string& spool_path, int64_t recording_limit) {
  const auto make = [&](const StudioCaptureSchedule& schedule) {
    auto source = std::make_unique<SyntheticStepSource>(spec, schedule);
    RecordingHeader header = source->header();
    return MadeSource{std::move(source), std::move(header)};
  };
  return from_source(make, view, spool_path, recording_limit);
}

std::unique_ptr<StudioRun> StudioRun::replay(const std::string& path) {
  std::unique_ptr<StudioRun> run(new StudioRun());
  run->replay_ = std::make_unique<RecordingReader>(path);
  const size_t sessions = run->replay_->header().policies.size();
  if (int(sessions) > kMaxStudioPolicies)
    throw Error(path + ": it records " + std::to_string(sessions) + " sessions; the app shows at most " +
                std::to_string(kMaxStudioPolicies) + " panes");
  run->replay_path_ = path;
  run->analyzer_ = replay_analyzer(*run->replay_);
  // A ring's file: the steps its checkpoint holds, then those it kept whole.
  run->recorded_steps_ = run->replay_->checkpoint_step() + 1 + count_recorded_steps(path);
  run->manifest_ = run->analyzer_->header().manifest;
  run->loop_ = std::make_unique<RunLoop>(*run->replay_);
  run->loop_->add_sink(*run->analyzer_);
  return run;
}

StudioRun::~StudioRun() { close(); }

void StudioRun::close() {
  if (pipeline_) pipeline_->set_after_step({});  // no snapshots of a closing run
  pipeline_.reset();  // the steps handed over go through first
  loop_.reset();
  needle_source_.reset();  // it steps engine_source_
  engine_source_.reset();
  other_source_.reset();
  spool_.reset();
  if (!spool_path_.empty()) {
    std::error_code ignored;
    std::filesystem::remove(spool_path_, ignored);
  }
  engine_.reset();
  replay_.reset();
}

RunDescription StudioRun::describe() const {
  if (!engine_ && !replay_) {
    const RecordingHeader& h = analyzer_->header();
    return {h.title,
            std::to_string(h.layers) + " layers × " + std::to_string(h.heads) + " heads (" + std::to_string(h.kv_heads) +
                " KV) · no model: steps of this shape made up at no cost",
            "synthetic"};
  }
  if (!engine_) {
    const RecordingHeader& h = analyzer_->header();
    return {h.title + " (replay)",
            "replay of " + std::filesystem::path(replay_path_).filename().string() + " · " + std::to_string(h.layers) +
                " layers × " + std::to_string(h.heads) + " heads (" + std::to_string(h.kv_heads) +
                " KV) · no model needed",
            "replay"};
  }
  const Model& m = engine_->model();
  return {model_display_name(m.path),
          m.config.architecture + " (" + m.format + " file) · " + m.weight_types() + " · " +
              std::to_string(m.config.n_layers) + " layers × " + std::to_string(m.config.n_heads) + " heads (" +
              std::to_string(m.config.n_kv_heads) + " KV) · vocab " + std::to_string(m.config.vocab_size) +
              " · context " + std::to_string(m.config.max_seq_len) + " · " + engine_->backend().describe(),
          m.weight_types()};
}

ReplayOpening StudioRun::replay_opening(const StudioConfig& controls) {
  const RecordingHeader& h = analyzer_->header();
  ReplayOpening opening;
  opening.layer = h.view_layer;
  opening.head = h.view_head;
  // Older files kept no settings: the controls show what the panes say of themselves.
  opening.settings = h.settings.is_null() ? studio_config_from_policies(controls, h.policies, h.mode == "forced")
                                          : studio_config_from_json(h.settings);
  opening.steps = recorded_steps_;
  // A replay opens on its first step: the timeline has a step to stand on and seeks at once.
  opening.first = step();
  if (opening.layer < 0) {  // older files name no view: the first step's watched layer
    opening.layer = std::max(0, analyzer_->live_window().watched_layer());
    opening.head = -1;
  }
  return opening;
}

// ---- stepping ------------------------------------------------------------------------

StepResult StudioRun::step() {
  StepResult result;
  if (!loop_) return result;
  try {
    std::optional<StepRecord> record = loop_->next();
    if (!record) {
      result.end_reason = loop_->source().end_reason();
      return result;
    }
    result.stepped = true;
    result.warnings = stop_messages(analyzer_->header().policies, *record, engine_ && engine_->done());
    if (pipeline_) {
      pipeline_->push(std::move(*record));
    } else {
      std::lock_guard lock(state_);
      loop_->deliver(*record);
    }
    tell_spool_stop(result);
  } catch (const std::bad_alloc&) {
    result.failure = "Out of memory in the engine; the run is paused. Lower the budget or reset.";
  } catch (const std::exception& e) {
    result.failure = std::string("Engine step failed: ") + e.what();
  }
  return result;
}

void StudioRun::run_beside(const PipelineOptions& options) {
  if (!spool_ || pipeline_) return;
  pipeline_ = std::make_unique<StepPipeline>(*loop_, state_, options);
}

void StudioRun::run_beside() {
  // The CPU backend's engine already has the cores the sinks would run on:
  // beside it they would only take time from it and from the window's frames.
  if (engine_ && !is_device_backend(engine_->backend().name())) return;
  run_beside(PipelineOptions{});
}

void StudioRun::after_each_step_beside(std::function<void()> after) {
  if (pipeline_) pipeline_->set_after_step(std::move(after));
}

std::string StudioRun::settle() {
  if (!pipeline_) return {};
  try {
    pipeline_->drain();
  } catch (const std::exception& e) {
    return std::string("Recording or analysing a step failed: ") + e.what();
  }
  return {};
}

void StudioRun::tell_spool_stop(StepResult& result) {
  if (!spool_ || spool_stop_told_) return;
  // Beside the engine the sinks' thread may hold the state for a snapshot
  // (milliseconds at Llama-2-7B's four panes): the engine does not wait for
  // it, and a later step tells instead.
  std::unique_lock lock(state_, std::defer_lock);
  if (!pipeline_) lock.lock();
  else if (!lock.try_lock()) return;
  if (spool_->turns() != spool_turns_told_) {
    const std::string first = std::to_string(spool_->first_step());
    if (spool_turns_told_ == 0)
      result.warnings.push_back("The recording reached its limit: from now on it keeps its newest steps in full (now "
                                "from step " + first + ") and the whole history before them; recordings, logs and "
                                "reports hold every step from " + first + " on in full");
    spool_turns_told_ = spool_->turns();
    result.banner = "Recording keeps every step from " + first + " on (its limit reached); earlier steps keep their "
                    "tokens and evictions, not their attention.";
  }
  if (!spool_->stopped()) return;
  spool_stop_told_ = true;
  const std::string last = std::to_string(spool_->last_step());
  result.warnings.push_back(spool_->stop_reason() + " at step " + last +
                            ": later steps are shown but not recorded; recordings, logs and reports hold steps 0–" +
                            last);
  result.banner = "Recording stopped at step " + last + " (" + spool_->stop_reason() + ").";
}

StepResult StudioRun::read_replay_to(int64_t step) {
  StepResult all;
  if (!replay_) return all;
  // The steps passed over are skimmed, the window at the last one read back whole (timeline.h).
  const auto one_step = [&] {
    StepResult one = this->step();
    all.warnings.insert(all.warnings.end(), one.warnings.begin(), one.warnings.end());
    if (!one.banner.empty()) all.banner = one.banner;
    if (!one.stepped) {
      all.end_reason = one.end_reason;
      all.failure = one.failure;
      return false;
    }
    all.stepped = true;
    return true;
  };
  try {
    h2o::read_replay_to(*replay_, *analyzer_, step, one_step);
  } catch (const std::exception& e) {  // the window around the step could not be read back
    if (all.failure.empty()) all.warnings.push_back(std::string("Reading the captures back failed: ") + e.what());
  }
  return all;
}

// ---- the timeline ----------------------------------------------------------------------

TimelineFile StudioRun::timeline_file() const {
  if (replay_) return {&replay_->index(), replay_path_, replay_->version(), nullptr};
  if (spool_) return {&spool_->index(), spool_path_, kRecordingVersion, spool_.get()};
  return {};
}

bool StudioRun::has_steps() const {
  std::lock_guard lock(state_);
  return analyzer_->steps_ingested() > 0;
}

int64_t StudioRun::latest_step() const {
  std::lock_guard lock(state_);
  return analyzer_->latest_step();
}

int64_t StudioRun::step_before() const {
  std::lock_guard lock(state_);
  return timeline_.step_before(*analyzer_);
}

// The timeline reads the spool back: every step taken so far must be in it.
std::string StudioRun::seek(int64_t step) {
  std::string failure = settle();
  std::lock_guard lock(state_);
  return failure.empty() ? timeline_.seek(*analyzer_, timeline_file(), step) : failure;
}

std::string StudioRun::advance() {
  std::string failure = settle();
  std::lock_guard lock(state_);
  return failure.empty() ? timeline_.advance(*analyzer_, timeline_file()) : failure;
}

StepResult StudioRun::step_forward() {
  settle();
  bool behind_cursor;
  {
    std::lock_guard lock(state_);
    behind_cursor = timeline_.behind(*analyzer_);
  }
  if (!behind_cursor) {
    timeline_.follow();
    return step();
  }
  StepResult result;
  result.stepped = true;
  if (std::string warning = advance(); !warning.empty()) result.warnings.push_back(std::move(warning));
  return result;
}

void StudioRun::start_playing() {
  if (!replay_) timeline_.follow();
}

double StudioRun::engine_seconds_at_shown() const {
  std::lock_guard lock(state_);
  return analyzer_->engine_seconds_at(timeline_.following() ? analyzer_->latest_step() : timeline_.cursor());
}

bool StudioRun::next_step_due(double engine_seconds) const {
  std::lock_guard lock(state_);
  if (!timeline_.following()) return !(analyzer_->engine_seconds_at(timeline_.cursor() + 1) > engine_seconds);
  return analyzer_->steps_ingested() == 0 || !(analyzer_->engine_seconds_at(analyzer_->latest_step()) > engine_seconds);
}

StudioSnapshot StudioRun::snapshot(ViewSelection view) const {
  std::lock_guard lock(state_);
  StageTimer timer(snapshot_s_);
  ++snapshots_;
  view.step = timeline_.cursor();
  return analyzer_->snapshot(view, timeline_.window());
}

void StudioRun::apply_view(const ViewSelection& view) {
  std::lock_guard lock(state_);
  analyzer_->pin(view.inspect_position);
  if (spool_) schedule_.set_layer(std::clamp(view.layer, 0, analyzer_->header().layers - 1));
}

std::string StudioRun::queue_prompt(const std::string& text) {
  if (!engine_) throw Error("a typed prompt needs a live run");
  Turn typed;
  typed.category = "typed";
  typed.text = text;
  engine_->queue_turn(std::move(typed));
  return "Queued: “" + text + "” follows the current turn (" + std::to_string(engine_->queued_turns()) + " waiting)";
}

std::string StudioRun::plant_needle(const std::string& text, const std::string& question, const std::string& answer) {
  if (!needle_source_) throw Error("a needle is planted in a live run (a replay holds the needles it recorded)");
  return needle_source_->plant(text, question, answer);
}

void StudioRun::ask_after_next_step() {
  if (!needle_source_) throw Error("an ask needs a live run (a replay shows the asks it recorded)");
  needle_source_->ask_after_next_step();
}

void StudioRun::ask_every(int64_t steps) {
  if (needle_source_) needle_source_->ask_every(steps);
}

// ---- files and figures -------------------------------------------------------------------

RunExport StudioRun::run_export(const std::string& state, const ViewSelection& view) const {
  // The exports read the spool and the analyzer after this returns: every
  // step taken must be in, and none is taken meanwhile (only the caller steps).
  if (pipeline_) pipeline_->drain();
  RunExport run;
  run.engine = engine_.get();
  run.spool = spool_.get();
  run.replay = replay_.get();
  run.recording = replay_ ? replay_path_ : spool_path_;
  run.manifest = &manifest_;
  run.info = run_info_;
  run.state = state;
  run.steps = analyzer_->steps_ingested();
  run.view_layer = view.layer;
  run.view_head = view.head;
  {
    std::lock_guard lock(state_);
    const StudioSnapshot shown = analyzer_->snapshot(ViewSelection{.step = view.step, .max_tokens = 1});
    std::vector<PolicyConfig> policies;
    for (const PaneSnapshot& pane : shown.panes) policies.push_back(pane.config);
    run.needle = needle_report_lines(shown.needle, policies);
  }
  return run;
}

std::string StudioRun::stats_line(double seconds) const {
  std::lock_guard lock(state_);
  int64_t positions = 0;
  const StudioSnapshot s = analyzer_->snapshot(ViewSelection{.max_tokens = 1, .heatmap_rows = 1, .overview_columns = 1,
                                                             .overview_rows = 1, .detail_positions = 1, .detail_rows = 1});
  for (const auto& p : s.panes) positions += p.stream_length;
  int64_t kv_allocated = 0;
  if (engine_)
    for (const auto& session : engine_->sessions()) kv_allocated += session->cache().allocated_bytes();
  std::error_code ec;
  const auto spool = spool_ ? int64_t(std::filesystem::file_size(spool_path_, ec)) : 0;
  // The timeline's index of the recording is whole-history state too (9 bytes a step).
  const TimelineFile file = timeline_file();
  const int64_t history = analyzer_->history_bytes() + (file.index ? file.index->bytes() : 0);
  char line[512];
  std::snprintf(line, sizeof line,
                "h2o-studio stats: seconds %.0f step %lld positions %lld rss_bytes %lld history_bytes %lld "
                "bounded_bytes %lld kv_allocated_bytes %lld spool_bytes %lld",
                seconds, static_cast<long long>(analyzer_->latest_step()), static_cast<long long>(positions),
                static_cast<long long>(process_rss_bytes()), static_cast<long long>(history),
                static_cast<long long>(analyzer_->bounded_bytes()), static_cast<long long>(kv_allocated),
                static_cast<long long>(ec ? 0 : spool));
  return line;
}

PipelineTimes StudioRun::pipeline_times() const {
  std::lock_guard lock(state_);
  PipelineTimes t;
  t.steps = analyzer_->steps_ingested();
  t.snapshots = snapshots_;
  t.source_s = loop_ ? loop_->source_seconds() : 0;
  t.history_s = analyzer_->history_seconds();
  t.analyzer_s = analyzer_->ingest_seconds() - t.history_s;
  t.snapshot_s = snapshot_s_;
  if (spool_) {
    t.encode_s = spool_->encode_seconds() + (loop_ ? loop_->prepare_seconds() : 0);  // the rounding is the recording's
    t.thinned_steps = pipeline_ ? pipeline_->thinned_steps() : 0;
    t.write_s = spool_->write_seconds();
    t.recording_bytes = spool_->bytes();
  }
  if (needle_source_) {
    t.asks = needle_source_->asks();
    t.ask_s = needle_source_->ask_seconds();
    t.ask_kv_bytes = needle_source_->ask_kv_bytes();
  }
  return t;
}

}  // namespace h2o
