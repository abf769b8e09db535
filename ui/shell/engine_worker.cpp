#include "ui/shell/engine_worker.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/backends/make_backend.h"
#include "core/base/error.h"

namespace h2o::ui {

// Shared between the worker and its model-loading threads: a loader that
// finishes after the worker is gone (or was cancelled) has nobody to tell.
struct LoadTicket {
  std::mutex mutex;
  EngineWorker* worker = nullptr;
};

namespace {
constexpr int kPublishIntervalMs = 40;   // at most ~25 snapshots a second
constexpr int kTickBudgetMs = 12;        // engine time per tick before the event loop gets a turn

QString q(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

EngineWorker::EngineWorker(std::shared_ptr<SnapshotSlot> slot, QObject* parent)
    : QObject(parent), slot_(std::move(slot)), timer_(new QTimer(this)), ticket_(std::make_shared<LoadTicket>()) {
  ticket_->worker = this;
  connect(timer_, &QTimer::timeout, this, &EngineWorker::tick);
  since_publish_.start();
  wall_.start();
}

EngineWorker::~EngineWorker() {
  // The spool goes with the run, however the app ends (main() turns SIGTERM and SIGINT into a quit).
  {
    std::lock_guard lock(ticket_->mutex);
    ticket_->worker = nullptr;
  }
  closeRun();
  if (!spool_path_.empty()) std::filesystem::remove(spool_path_);
}

void EngineWorker::closeRun() {
  loop_.reset();
  engine_source_.reset();
  spool_.reset();
}

void EngineWorker::fail(const QString& message) {
  setRunning(false);
  emit failed(message);
}

void EngineWorker::setRunning(bool running) {
  if (running == running_) return;
  running_ = running;
  if (running) restartTimer();
  else timer_->stop();
  emit runningChanged(running);
}

void EngineWorker::restartTimer() { timer_->start(tick_interval_ms(replay_ != nullptr, pace_, speed_limit_)); }

void EngineWorker::yieldToGui() {
#ifdef __linux__
  // Linux keeps a nice value per thread; threads started later from this one inherit it.
  const pid_t tid = pid_t(::syscall(SYS_gettid));
  const int now = ::getpriority(PRIO_PROCESS, id_t(tid));
  ::setpriority(PRIO_PROCESS, id_t(tid), std::min(19, now + 5));
#endif
}

// ---- loading --------------------------------------------------------------------

void EngineWorker::configure(const StudioConfig& config) {
  const bool same_inputs = have_config_ && inputs_ && config.model == config_.model &&
                           config.tokenizer == config_.tokenizer;
  config_ = config;
  have_config_ = true;
  view_.layer = config.capture_layer;
  replay_.reset();
  if (same_inputs) {
    startLive();
    return;
  }
  setRunning(false);
  closeRun();
  engine_.reset();
  inputs_.reset();
  const quint64 generation = ++generation_;
  loading_ = true;
  unusable_.clear();
  emit loading(q(model_display_name(config.model)));
  // Loading can take seconds for big files: a thread of its own, whose result
  // is dropped if another load (or a cancel) came after it.
  std::thread([ticket = ticket_, config, generation] {
    std::shared_ptr<StudioInputs> inputs;
    QString error;
    try {
      inputs = std::make_shared<StudioInputs>(load_studio_inputs(config));
    } catch (const std::bad_alloc&) {
      error = "out of memory while loading " + q(config.model);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    std::lock_guard lock(ticket->mutex);
    if (EngineWorker* worker = ticket->worker)
      QMetaObject::invokeMethod(worker, [worker, generation, inputs, error] { worker->onLoaded(generation, inputs, error); },
                                Qt::QueuedConnection);
  }).detach();
}

void EngineWorker::cancelLoad() {
  if (inputs_ || replay_) return;
  ++generation_;
  autoplay_pending_ = false;
  loading_ = false;
  unusable_ = "loading " + q(model_display_name(config_.model)) + " was cancelled; Reset loads it again";
  emit loadCancelled();
}

void EngineWorker::onLoaded(quint64 generation, std::shared_ptr<StudioInputs> inputs, QString error) {
  if (generation != generation_) return;  // cancelled or superseded
  loading_ = false;
  if (!error.isEmpty()) {
    autoplay_pending_ = false;
    unusable_ = error;
    // It stays said: Play has nothing to run until another model loads.
    emit banner("model", "No model to run: " + error + " — choose another model in the controls.");
    fail(error);
    return;
  }
  emit banner("model", {});
  inputs_ = std::move(inputs);
  startLive();
}

void EngineWorker::startLive() {
  setRunning(false);
  closeRun();
  replay_.reset();
  engine_.reset();
  analyzer_.reset();
  timeline_.follow();
  try {
    StudioConfig config = config_;
    config.capture_layer = std::clamp(view_.layer, 0, inputs_->model->config.n_layers - 1);
    schedule_.set_layer(config.capture_layer);
    engine_ = make_studio_engine(config, *inputs_, makeBackend(config));
    engine_source_ = std::make_unique<EngineSource>(*engine_, &schedule_);
    // Hashing is quick for small files and would stall the start of big ones.
    std::error_code ec;
    const auto size = std::filesystem::file_size(inputs_->model_path, ec);
    manifest_ = describe_run(*engine_, studio_run_info(config, *inputs_, !ec && size < (64u << 20)));
    run_info_ = studio_run_info(config, *inputs_, false);
    manifest_["mode"] = config.forced ? "forced" : "stream";
    RecordingHeader header = make_header(*engine_, manifest_, config.forced ? "forced" : "stream");
    // What a replay restores: the view when recording began and the settings.
    header.view_layer = config.capture_layer;
    header.view_head = view_.head;
    header.settings = studio_config_json(config);
    analyzer_ = std::make_unique<Analyzer>(std::move(header));
    openSpool();
    loop_ = std::make_unique<RunLoop>(*engine_source_);
    loop_->add_sink(*spool_);
    loop_->add_sink(*analyzer_);
  } catch (const std::bad_alloc&) {
    closeRun();
    engine_.reset();
    unusable_ = "out of memory while starting the engine";
    fail("Out of memory while starting the engine.");
    return;
  } catch (const std::exception& e) {
    closeRun();
    engine_.reset();
    unusable_ = QString::fromUtf8(e.what());
    fail(QString::fromUtf8(e.what()));
    return;
  }
  unusable_.clear();
  emit liveStarted(!config_.forced);
  const Model& m = engine_->model();
  emit loaded(q(model_display_name(m.path)),
              QString("%1 (%2 file) · %3 · %4 layers × %5 heads (%6 KV) · vocab %7 · context %8 · %9")
                  .arg(q(m.config.architecture))
                  .arg(q(m.format))
                  .arg(q(m.weight_types()))  // the type mix, e.g. Q4_K_M
                  .arg(m.config.n_layers)
                  .arg(m.config.n_heads)
                  .arg(m.config.n_kv_heads)
                  .arg(m.config.vocab_size)
                  .arg(m.config.max_seq_len)
                  .arg(q(engine_->backend().describe())),
              q(m.weight_types()));
  publish(true);
  if (autoplay_pending_) {
    autoplay_pending_ = false;
    setRunning(true);
  }
}

std::unique_ptr<Backend> EngineWorker::makeBackend(const StudioConfig& config) {
  try {
    auto backend = make_backend(inputs_->model, studio_backend_options(config));
    emit banner("backend", {});
    return backend;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    if (config.backend == "cpu") throw;
    // No CUDA in this build, or no GPU: say so — for as long as it lasts — and
    // stream on the CPU rather than show nothing.
    const QString why = QString::fromUtf8(e.what());
    emit warned(why + " — running on the CPU instead.");
    // The banner in a teacher's words: which device, why in short (the
    // driver's details stay in the warning above, in the status bar's log).
    QString reason = why;
    reason.remove(QRegularExpression("^--backend: *")).remove(QRegularExpression("^" + QRegularExpression::escape(q(config.backend)) + ": *"));
    if (const qsizetype cut = reason.indexOf(" ("); cut > 0) reason.truncate(cut);
    emit banner("backend", QString("Running on the CPU: the %1 device cannot start here (%2).").arg(q(config.backend), reason));
    StudioConfig cpu = config;
    cpu.backend = "cpu";
    return make_backend(inputs_->model, studio_backend_options(cpu));
  }
}

void EngineWorker::openSpool() {
  spool_.reset();
  if (!spool_path_.empty()) std::filesystem::remove(spool_path_);
  static int counter = 0;
  spool_path_ = QDir(QDir::tempPath())
                    .filePath(QString("h2o-studio-%1-%2.jsonl").arg(QCoreApplication::applicationPid()).arg(++counter))
                    .toStdString();
  spool_ = std::make_unique<RecordingWriter>(spool_path_, analyzer_->header(), recording_limit_);
  spool_stop_told_ = false;
}

void EngineWorker::setRecordingLimit(qint64 bytes) { recording_limit_ = std::max<qint64>(0, bytes); }

void EngineWorker::openReplay(const QString& path) {
  setRunning(false);
  ++generation_;  // a model still loading is no longer wanted
  loading_ = false;
  int64_t steps = 0;
  try {
    auto reader = std::make_unique<RecordingReader>(path.toStdString());
    steps = count_recorded_steps(path.toStdString());
    closeRun();
    engine_.reset();
    inputs_.reset();
    analyzer_ = std::make_unique<Analyzer>(reader->header());
    replay_ = std::move(reader);
    replay_path_ = path;
    manifest_ = analyzer_->header().manifest;
    loop_ = std::make_unique<RunLoop>(*replay_);
    loop_->add_sink(*analyzer_);
    timeline_.follow();
    unusable_.clear();
  } catch (const std::exception& e) {
    fail(QString::fromUtf8(e.what()));
    return;
  }
  emit banner("backend", {});
  emit banner("model", {});
  emit banner("recording", {});
  const RecordingHeader& h = analyzer_->header();
  // The view it was recorded with; older files say nothing: the first step's watched layer.
  int layer = h.view_layer, head = h.view_head;
  if (layer < 0) {
    stepOnceInternal();
    layer = std::max(0, analyzer_->live_window().watched_layer());
    head = -1;
  }
  // The window owns the view: it applies this one (and sends it back).
  emit replayOpened(layer, head, studio_config_from_json(h.settings), !h.settings.is_null(), steps);
  emit loaded(q(h.title) + " (replay)", QString("replay of %1 · %2 layers × %3 heads (%4 KV) · no model needed")
                                            .arg(QFileInfo(path).fileName())
                                            .arg(h.layers)
                                            .arg(h.heads)
                                            .arg(h.kv_heads),
              "replay");
  publish(true);
  if (autoplay_pending_) {
    autoplay_pending_ = false;
    setRunning(true);
  }
}

// ---- playing ----------------------------------------------------------------------

void EngineWorker::play() {
  if (!loop_) {
    // Nothing to run: say why rather than do nothing.
    if (loading_) emit status("Still loading the model: Play starts once it is loaded.");
    else fail("Cannot play: " + (unusable_.isEmpty() ? QString("no model is loaded — choose one in the controls") : unusable_));
    return;
  }
  // A live run cannot rewind its engine: Play goes back to the newest step. A
  // replay plays on from the step shown.
  if (!replay_) timeline_.follow();
  const int64_t shown = timeline_.following() ? analyzer_->latest_step() : timeline_.cursor();
  pace_.start(analyzer_->engine_seconds_at(shown), wall_.elapsed() / 1000.0);
  setRunning(true);
}

void EngineWorker::pause() {
  // The paused frame goes out before runningChanged(false): once the window
  // hears that the run paused, the frame it shows is the last one.
  publish(true);
  setRunning(false);
}

void EngineWorker::stepOnce() {
  setRunning(false);
  if (!loop_) {
    play();  // says why
    return;
  }
  if (analyzer_ && timeline_.behind(*analyzer_)) {
    advanceCursor();
  } else {
    timeline_.follow();
    stepOnceInternal();
  }
  publish(true);
}

void EngineWorker::advanceCursor() {
  const std::string warning = timeline_.advance(*analyzer_, timelineFile());
  if (!warning.empty()) emit warned(q(warning));
}

void EngineWorker::stepBack() {
  if (!analyzer_ || analyzer_->steps_ingested() == 0) return;
  seek(timeline_.step_before(*analyzer_));
}

void EngineWorker::seek(qint64 step) {
  setRunning(false);
  if (!analyzer_) return;
  if (replay_ && step > analyzer_->latest_step()) readReplayTo(step);
  const std::string warning = timeline_.seek(*analyzer_, timelineFile(), step);
  if (!warning.empty()) emit warned(q(warning));
  publish(true);
}

void EngineWorker::goLive() {
  timeline_.follow();
  publish(true);
}

TimelineFile EngineWorker::timelineFile() const {
  if (replay_) return {&replay_->index(), replay_path_.toStdString(), replay_->version(), nullptr};
  if (spool_) return {&spool_->index(), spool_path_, 2, spool_.get()};
  return {};
}

void EngineWorker::readReplayTo(int64_t step) {
  while (analyzer_->latest_step() < step)
    if (!stepOnceInternal()) break;
}

void EngineWorker::queuePrompt(const QString& text) {
  if (!engine_) {
    emit failed("A typed prompt needs a live run (a replay only plays what was recorded).");
    return;
  }
  try {
    Turn typed;
    typed.category = "typed";
    typed.text = text.toStdString();
    engine_->queue_turn(std::move(typed));
    emit status(QString("Queued: “%1” follows the current turn (%2 waiting)").arg(text).arg(engine_->queued_turns()));
  } catch (const std::exception& e) {
    emit failed(QString("The prompt was not queued: ") + QString::fromUtf8(e.what()));
  }
}

void EngineWorker::setReplayPace(double times) {
  pace_.set_speed(times);
  if (analyzer_) {
    const int64_t shown = timeline_.following() ? analyzer_->latest_step() : timeline_.cursor();
    pace_.start(analyzer_->engine_seconds_at(shown), wall_.elapsed() / 1000.0);
  }
  if (running_) restartTimer();
}

void EngineWorker::setStatsInterval(int seconds) {
  if (!stats_timer_) {
    stats_timer_ = new QTimer(this);
    connect(stats_timer_, &QTimer::timeout, this, &EngineWorker::printStats);
    stats_clock_.start();
  }
  if (seconds > 0) stats_timer_->start(seconds * 1000);
  else stats_timer_->stop();
}

void EngineWorker::printStats() {
  if (!analyzer_) return;
  int64_t positions = 0;
  const StudioSnapshot s = analyzer_->snapshot(ViewSelection{.max_tokens = 1, .heatmap_rows = 1, .overview_columns = 1,
                                                             .overview_rows = 1, .detail_positions = 1, .detail_rows = 1});
  for (const auto& p : s.panes) positions += p.stream_length;
  int64_t kv_allocated = 0;
  if (engine_)
    for (const auto& session : engine_->sessions()) kv_allocated += session->cache().allocated_bytes();
  int64_t rss = 0;
#ifdef __linux__
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stoll(line.substr(6)) * 1024;
#endif
  std::error_code ec;
  const auto spool = spool_ ? int64_t(std::filesystem::file_size(spool_path_, ec)) : 0;
  // One line a sample, "name value" pairs: scripts/soak_studio.sh reads them.
  std::printf("h2o-studio stats: seconds %.0f step %lld positions %lld rss_bytes %lld history_bytes %lld "
              "bounded_bytes %lld kv_allocated_bytes %lld spool_bytes %lld\n",
              stats_clock_.elapsed() / 1000.0, static_cast<long long>(analyzer_->latest_step()),
              static_cast<long long>(positions), static_cast<long long>(rss),
              // The timeline's index of the recording is whole-history state too (9 bytes a step).
              static_cast<long long>(analyzer_->history_bytes() + (timelineFile().index ? timelineFile().index->bytes() : 0)),
              static_cast<long long>(analyzer_->bounded_bytes()),
              static_cast<long long>(kv_allocated), static_cast<long long>(ec ? 0 : spool));
  std::fflush(stdout);
}

void EngineWorker::reset() {
  timeline_.follow();
  if (replay_) {
    openReplay(replay_path_);
  } else if (inputs_) {
    startLive();
  } else if (have_config_) {
    configure(config_);  // nothing loaded (cancelled or failed): try the load again
  }
}

void EngineWorker::playSteps(int steps) {
  autoplay_left_ = steps;
  if (loop_) setRunning(true);
  else autoplay_pending_ = true;
}

void EngineWorker::setSpeedLimit(double steps_per_second) {
  speed_limit_ = std::max(0.0, steps_per_second);
  if (running_ && !replay_) restartTimer();
}

void EngineWorker::setView(const ViewSelection& view) {
  view_ = view;
  if (analyzer_) analyzer_->pin(view.inspect_position);
  if (engine_) schedule_.set_layer(std::clamp(view.layer, 0, engine_->model().config.n_layers - 1));
  if (analyzer_) publish(true);
}

bool EngineWorker::stepOnceInternal() {
  if (!loop_) return false;
  try {
    const std::optional<StepRecord> record = loop_->step();
    if (!record) {
      emit status(QString::fromStdString(loop_->source().end_reason()));
      return false;
    }
    for (const std::string& line : stop_messages(analyzer_->header().policies, *record, engine_ && engine_->done()))
      emit warned(QString::fromStdString(line));
    if (spool_ && spool_->stopped() && !spool_stop_told_) {
      spool_stop_told_ = true;
      const QString why = QString::fromStdString(spool_->stop_reason()) +
                          QString(" at step %1: later steps are shown but not recorded; recordings, logs and reports "
                                  "hold steps 0–%1")
                              .arg(spool_->last_step());
      emit warned(why);
      emit banner("recording", QString("Recording stopped at step %1 (%2).").arg(spool_->last_step()).arg(QString::fromStdString(spool_->stop_reason())));
    }
    return true;
  } catch (const std::bad_alloc&) {
    fail("Out of memory in the engine; the run is paused. Lower the budget or reset.");
  } catch (const std::exception& e) {
    fail(QString("Engine step failed: ") + QString::fromUtf8(e.what()));
  }
  return false;
}

bool EngineWorker::stepForTick() {
  const bool stepped = stepOnceInternal();
  if (stepped && !(autoplay_left_ > 0 && --autoplay_left_ == 0)) return true;
  // The end of the run, or the last step autoplay asked for: pause on it.
  setRunning(false);
  publish(true);
  finishAutoplayIfDue();
  if (!stepped) autoplay_left_ = -1;
  return false;
}

void EngineWorker::tick() {
  if (replay_ && pace_.paced()) {
    const double target = pace_.target(wall_.elapsed() / 1000.0);
    QElapsedTimer budget;
    budget.start();
    while (budget.elapsed() < kTickBudgetMs) {
      if (!timeline_.following()) {
        if (analyzer_->engine_seconds_at(timeline_.cursor() + 1) > target) break;
        advanceCursor();  // through the history read so far
        continue;
      }
      if (analyzer_->steps_ingested() > 0 && analyzer_->engine_seconds_at(analyzer_->latest_step()) > target) break;
      if (!stepForTick()) return;
    }
    publish(false);
    return;
  }
  QElapsedTimer budget;
  budget.start();
  const bool one_per_tick = speed_limit_ > 0 && !replay_;
  do {
    if (!stepForTick()) return;
  } while (!one_per_tick && budget.elapsed() < kTickBudgetMs);
  publish(false);
}

void EngineWorker::finishAutoplayIfDue() {
  if (autoplay_left_ < 0) return;
  autoplay_left_ = -1;
  emit autoplayDone();
}

void EngineWorker::publish(bool force) {
  if (!analyzer_) return;
  // Building costs worker time: not more often than the GUI can use.
  if (!force && (since_publish_.elapsed() < kPublishIntervalMs || !slot_->empty())) return;
  since_publish_.restart();
  ViewSelection view = view_;
  view.step = timeline_.cursor();
  auto snapshot = std::make_shared<StudioSnapshot>(analyzer_->snapshot(view, timeline_.window()));
  if (slot_->put(std::move(snapshot))) emit snapshotPending();
}

// ---- files -----------------------------------------------------------------------

RunExport EngineWorker::runExport() const {
  RunExport run;
  run.engine = engine_.get();
  run.spool = spool_.get();
  run.replay = replay_.get();
  run.recording = replay_ ? replay_path_.toStdString() : spool_path_;
  run.manifest = &manifest_;
  run.info = run_info_;
  run.state = running_ ? "running" : "paused";
  run.steps = analyzer_ ? analyzer_->steps_ingested() : 0;
  run.view_layer = view_.layer;
  run.view_head = view_.head;
  return run;
}

void EngineWorker::writeFile(const QString& path, const QString& action,
                             void (RunExport::*writer)(const std::string&) const) {
  try {
    (runExport().*writer)(path.toStdString());
    emit fileWritten(path);
  } catch (const std::exception& e) {
    emit failed(action + " failed: " + QString::fromUtf8(e.what()));
  }
}

void EngineWorker::saveRecording(const QString& path) { writeFile(path, "Saving the recording", &RunExport::write_recording); }

void EngineWorker::exportLogs(const QString& dir) { writeFile(dir, "Exporting the logs", &RunExport::write_logs); }

void EngineWorker::writeReport(const QString& staging, const QString& dir, const QStringList& plots, const QString& written) {
  std::vector<std::string> files;
  for (const QString& p : plots) files.push_back(p.toStdString());
  try {
    runExport().write_report(staging.toStdString(), dir.toStdString(), files, written.toStdString());
    emit reportWritten(dir);
  } catch (const std::exception& e) {
    emit failed("Writing the report failed: " + QString::fromUtf8(e.what()));
  }
}

}  // namespace h2o::ui
