#include "ui/shell/engine_worker.h"

#include <QCoreApplication>
#include <QDir>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/backends/make_backend.h"
#include "core/flags/run_flags.h"
#include "ui/shell/studio_settings.h"

namespace h2o::ui {

// Shared between the worker and its model-loading threads: a loader that
// finishes after the worker is gone (or was cancelled) has nobody to tell.
struct LoadTicket {
  std::mutex mutex;
  EngineWorker* worker = nullptr;
};

// One load's progress and stop flag, shared with its thread: the loader writes
// the first and reads the second (from its pool's threads), the worker the reverse.
struct LoadMeter {
  std::atomic<int> permille{-1};  // -1: nothing reported (a mapped file reports nothing)
  std::atomic<bool> stop{false};  // cancelled, superseded or the worker gone
};

namespace {
constexpr int kTickBudgetMs = 12;        // engine time per tick before the event loop gets a turn

QString q(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

EngineWorker::EngineWorker(std::shared_ptr<SnapshotSlot> slot, QObject* parent)
    : QObject(parent), slot_(std::move(slot)), timer_(new QTimer(this)), ticket_(std::make_shared<LoadTicket>()) {
  ticket_->worker = this;
  connect(timer_, &QTimer::timeout, this, &EngineWorker::tick);
  load_poll_ = new QTimer(this);
  load_poll_->setInterval(100);
  connect(load_poll_, &QTimer::timeout, this, [this] {
    const int now = load_meter_ ? load_meter_->permille.load() : -1;
    if (now < 0 || now == load_shown_) return;
    load_shown_ = now;
    emit loadProgress(now / 1000.0);
  });
  since_start_.start();
  wall_.start();
}

EngineWorker::~EngineWorker() {
  {
    std::lock_guard lock(ticket_->mutex);
    ticket_->worker = nullptr;
  }
  stopLoadThread();
  // The spool goes with the run, however the app ends (main() turns SIGTERM and SIGINT into a quit).
  run_.reset();
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

void EngineWorker::restartTimer() { timer_->start(tick_interval_ms(isReplay(), pace_, liveLimit())); }

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
  {
    std::lock_guard lock(publish_mutex_);
    view_.layer = config.capture_layer;
  }
  if (same_inputs) {
    startLive();
    return;
  }
  setRunning(false);
  if (run_) run_->close();  // its engine goes before the next model loads
  inputs_.reset();
  const quint64 generation = ++generation_;
  loading_ = true;
  unusable_.clear();
  stopLoadThread();
  load_meter_ = std::make_shared<LoadMeter>();
  load_shown_ = -1;
  load_poll_->start();
  emit loading(q(model_display_name(config.model)));
  // Loading can take seconds for big files (minutes for a synthetic 7B): a
  // thread of its own, whose result is dropped if another load (or a cancel)
  // came after it; those also stop it making weights (its meter's stop flag).
  std::thread([ticket = ticket_, meter = load_meter_, config, generation] {
    std::shared_ptr<StudioInputs> inputs;
    QString error;
    const LoadProgress progress = [meter](int64_t done, int64_t total) {
      meter->permille = int(std::min<int64_t>(1000, done * 1000 / std::max<int64_t>(1, total)));
      return !meter->stop.load(std::memory_order_relaxed);
    };
    try {
      inputs = std::make_shared<StudioInputs>(load_studio_inputs(config, progress));
    } catch (const LoadCancelled&) {
      return;  // only a newer load, a cancel or the worker's end stops it: nobody waits for this one
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

void EngineWorker::stopLoadThread() {
  load_poll_->stop();
  if (load_meter_) load_meter_->stop = true;
  load_meter_.reset();
}

void EngineWorker::cancelLoad() {
  if (inputs_ || isReplay()) return;
  stopLoadThread();
  ++generation_;
  autoplay_pending_ = false;
  loading_ = false;
  unusable_ = "loading " + q(model_display_name(config_.model)) + " was cancelled; Reset loads it again";
  emit loadCancelled();
}

void EngineWorker::onLoaded(quint64 generation, std::shared_ptr<StudioInputs> inputs, QString error) {
  if (generation != generation_) return;  // cancelled or superseded
  loading_ = false;
  stopLoadThread();  // its thread is done: the meter goes
  if (!error.isEmpty()) {
    autoplay_pending_ = false;
    unusable_ = error;
    // It stays said: Play has nothing to run until another model loads.
    emit banner("model", "No model to run: " + error +
                             " — open another with File ▸ Open model… or by dropping it onto the window, or pick one "
                             "in the controls.");
    fail(error);
    return;
  }
  emit banner("model", {});
  emit banner("tokenizer", q(inputs->tokenizer_warning));  // said while this model runs
  inputs_ = std::move(inputs);
  startLive();
}

void EngineWorker::startLive() {
  setRunning(false);
  run_.reset();  // the old engine goes before the new one is made
  try {
    run_ = StudioRun::live(config_, *inputs_, makeBackend(config_), view_, newSpoolPath(), recording_limit_);
    runBeside();  // recording, analysis and snapshots beside the engine, not between its steps
  } catch (const std::bad_alloc&) {
    unusable_ = "out of memory while starting the engine";
    fail("Out of memory while starting the engine.");
    return;
  } catch (const std::exception& e) {
    unusable_ = QString::fromUtf8(e.what());
    fail(QString::fromUtf8(e.what()));
    return;
  }
  unusable_.clear();
  needle_plan_.planted = false;
  run_->ask_every(needle_plan_.ask_every);
  if (needle_plan_.at_step == 0) plantIfDue();
  emit liveStarted(!config_.forced);
  runStarted();
}

void EngineWorker::runStarted() {
  const RunDescription about = run_->describe();
  emit loaded(q(about.title), q(about.details), q(about.types));
  publish(true);
  if (autoplay_pending_) {
    autoplay_pending_ = false;
    setRunning(true);
  }
}

std::unique_ptr<Backend> EngineWorker::makeBackend(const StudioConfig& config) {
  BackendChoice choice = make_backend_or_cpu(inputs_->model, studio_backend_options(config));
  if (choice.error.empty()) {
    emit banner("backend", {});
  } else {
    // Said for as long as it lasts, in a teacher's words; the driver's details go to the status bar's log.
    emit warned(QString::fromUtf8(choice.error) + " — running on the CPU instead.");
    emit banner("backend", QString("Running on the CPU: the %1 device cannot start here (%2).")
                               .arg(q(config.backend), QString::fromUtf8(choice.reason)));
  }
  return std::move(choice.backend);
}

std::string EngineWorker::newSpoolPath() const {
  static int counter = 0;
  return QDir(QDir::tempPath())
      .filePath(QString("h2o-studio-%1-%2.jsonl").arg(QCoreApplication::applicationPid()).arg(++counter))
      .toStdString();
}

void EngineWorker::setRecordingLimit(qint64 bytes) { recording_limit_ = std::max<qint64>(0, bytes); }

void EngineWorker::openReplay(const QString& path) {
  setRunning(false);
  ++generation_;  // a model still loading is no longer wanted
  stopLoadThread();
  loading_ = false;
  try {
    std::unique_ptr<StudioRun> replay = StudioRun::replay(path.toStdString());
    run_ = std::move(replay);  // the run before goes only once this one opened
  } catch (const std::exception& e) {
    fail(QString::fromUtf8(e.what()));
    return;
  }
  inputs_.reset();
  unusable_.clear();
  emit banner("backend", {});
  emit banner("model", {});
  emit banner("tokenizer", {});
  emit banner("recording", {});
  ReplayOpening opening = run_->replay_opening(config_);
  // Within the flags' bounds, as remembered settings are: a value outside
  // them (an edited file) reads as the default, not as the nearest bound.
  keep_in_bounds(opening.settings, StudioSettings{}.config);
  report(opening.first);
  // The window owns the view: it applies this one (and sends it back).
  emit replayOpened(opening.layer, opening.head, opening.settings, opening.steps);
  runStarted();
}

void EngineWorker::startSynthetic(const SyntheticStepsSpec& spec) {
  setRunning(false);
  ++generation_;  // a model still loading is no longer wanted
  stopLoadThread();
  loading_ = false;
  run_.reset();
  try {
    run_ = StudioRun::synthetic(spec, view_, newSpoolPath(), recording_limit_);
    runBeside();
  } catch (const std::exception& e) {
    fail(QString::fromUtf8(e.what()));
    return;
  }
  inputs_.reset();
  unusable_.clear();
  emit liveStarted(false);
  runStarted();
}

// ---- playing ----------------------------------------------------------------------

void EngineWorker::play() {
  if (!run_ || !run_->runs()) {
    // Nothing to run: say why rather than do nothing.
    if (loading_) emit status("Still loading the model: Play starts once it is loaded.");
    else fail("Cannot play: " + (unusable_.isEmpty() ? QString("no model is loaded — choose one in the controls") : unusable_));
    return;
  }
  run_->start_playing();
  pace_.start(run_->engine_seconds_at_shown(), wall_.elapsed() / 1000.0);
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
  if (!run_ || !run_->runs()) {
    play();  // says why
    return;
  }
  report(run_->step_forward());
  plantIfDue();
  publish(true);
}

void EngineWorker::stepBack() {
  if (run_ && run_->has_steps()) seek(run_->step_before());
}

void EngineWorker::seek(qint64 step) {
  setRunning(false);
  if (!run_) return;
  report(run_->read_replay_to(step));  // a replay reads on to a step it has not reached yet
  warn(run_->seek(step));
  publish(true);
}

void EngineWorker::goLive() {
  if (run_) run_->follow();
  publish(true);
}

void EngineWorker::queuePrompt(const QString& text) {
  if (!run_ || !run_->is_live()) {
    emit failed("A typed prompt needs a live run (a replay only plays what was recorded).");
    return;
  }
  try {
    emit status(q(run_->queue_prompt(text.toStdString())));
  } catch (const std::exception& e) {
    emit failed(QString("The prompt was not queued: ") + QString::fromUtf8(e.what()));
  }
}

void EngineWorker::plantNeedle(const QString& text, const QString& question, const QString& answer) {
  if (!run_ || !run_->is_live()) {
    emit failed("A needle is planted in a live run (a replay shows the needle it recorded).");
    return;
  }
  try {
    emit status(q(run_->plant_needle(text.toStdString(), question.toStdString(), answer.toStdString())));
  } catch (const std::exception& e) {
    emit failed(QString("The needle was not planted: ") + QString::fromUtf8(e.what()));
  }
}

void EngineWorker::askNeedle() {
  if (!run_ || !run_->is_live()) {
    emit failed("Ask needs a live run (a replay shows the asks it recorded).");
    return;
  }
  try {
    run_->ask_after_next_step();
  } catch (const std::exception& e) {
    emit failed(QString("Nothing to ask: ") + QString::fromUtf8(e.what()));
    return;
  }
  if (running_) return;  // the next tick's step asks
  report(run_->step());  // paused: one step, then the ask, shown now
  publish(true);
}

void EngineWorker::setNeedlePlan(const QString& text, const QString& question, const QString& answer, qint64 at_step,
                                 qint64 ask_every) {
  needle_plan_ = {text, question, answer, at_step, ask_every, false};
  if (run_ && run_->is_live()) run_->ask_every(ask_every);
}

void EngineWorker::plantIfDue() {
  if (needle_plan_.at_step < 0 || needle_plan_.planted || !run_ || !run_->is_live()) return;
  // The step the next one will be: the needle goes in when the turn then running ends.
  if ((run_->has_steps() ? run_->latest_step() + 1 : 0) < needle_plan_.at_step) return;
  needle_plan_.planted = true;
  plantNeedle(needle_plan_.text, needle_plan_.question, needle_plan_.answer);
}

void EngineWorker::setReplayPace(double times) {
  pace_.set_speed(times);
  if (run_) pace_.start(run_->engine_seconds_at_shown(), wall_.elapsed() / 1000.0);
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
  if (!run_) return;
  std::printf("%s\n", run_->stats_line(stats_clock_.elapsed() / 1000.0).c_str());
  std::fflush(stdout);
}

void EngineWorker::reset() {
  if (run_) run_->follow();
  if (isReplay()) {
    openReplay(q(run_->replay_path()));
  } else if (inputs_) {
    startLive();
  } else if (have_config_) {
    configure(config_);  // nothing loaded (cancelled or failed): try the load again
  }
}

void EngineWorker::playSteps(int steps) {
  autoplay_left_ = steps;
  if (running_) restartTimer();  // off the speed limit's interval
  if (run_ && run_->runs()) setRunning(true);
  else autoplay_pending_ = true;
}

void EngineWorker::setSpeedLimit(double steps_per_second) {
  speed_limit_ = std::max(0.0, steps_per_second);
  if (running_ && !isReplay()) restartTimer();
}

void EngineWorker::setView(const ViewSelection& view) {
  {
    std::lock_guard lock(publish_mutex_);
    view_ = view;
  }
  if (!run_) return;
  run_->apply_view(view);
  publish(true);
}

bool EngineWorker::report(const StepResult& result) {
  for (const std::string& line : result.warnings) emit warned(q(line));
  if (!result.banner.empty()) emit banner("recording", q(result.banner));
  if (!result.end_reason.empty()) emit status(q(result.end_reason));
  if (!result.failure.empty()) fail(q(result.failure));
  return result.stepped;
}

void EngineWorker::warn(const std::string& warning) {
  if (!warning.empty()) emit warned(q(warning));
}

bool EngineWorker::stepForTick() {
  const bool stepped = run_ && report(run_->step());
  if (stepped) plantIfDue();
  if (stepped && !(autoplay_left_ > 0 && --autoplay_left_ == 0)) return true;
  // The end of the run, or the last step autoplay asked for: pause on it.
  setRunning(false);
  publish(true);
  finishAutoplayIfDue();
  if (!stepped) autoplay_left_ = -1;
  return false;
}

void EngineWorker::tick() {
  if (isReplay() && pace_.paced()) {
    const double target = pace_.target(wall_.elapsed() / 1000.0);
    QElapsedTimer budget;
    budget.start();
    while (budget.elapsed() < kTickBudgetMs && run_->next_step_due(target)) {
      if (!run_->following()) {
        warn(run_->advance());  // through the history read so far
        continue;
      }
      if (!stepForTick()) return;
    }
    publish(false);
    return;
  }
  QElapsedTimer budget;
  budget.start();
  const bool one_per_tick = liveLimit() > 0 && !isReplay();
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
  if (!run_) return;
  // A paused frame shows every step taken; while the sinks are behind, fewer frames (snapshots thin first).
  if (force) warn(run_->settle());
  else if (run_->beside()) return;  // the sinks' thread builds them as it takes each step in (runBeside)
  buildSnapshot(*run_, force);
}

void EngineWorker::buildSnapshot(const StudioRun& run, bool force) {
  std::lock_guard lock(publish_mutex_);
  if (!cadence_.due(since_start_.elapsed(), force, !slot_->empty(), run.behind())) return;
  auto snapshot = std::make_shared<StudioSnapshot>(run.snapshot(view_));
  if (slot_->put(std::move(snapshot))) emit snapshotPending();
}

void EngineWorker::runBeside() {
  run_->run_beside();
  // A snapshot of 7B's four panes takes ~2 ms of a 7.7 ms step on an H200's host: off the engine's thread.
  const StudioRun* run = run_.get();
  run_->after_each_step_beside([this, run] { buildSnapshot(*run, false); });
}

// ---- files -----------------------------------------------------------------------

RunExport EngineWorker::runExport() const {
  return run_ ? run_->run_export(running_ ? "running" : "paused", view_) : RunExport{};
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
