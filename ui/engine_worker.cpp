#include "engine_worker.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/backends/make_backend.h"
#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/studio/report.h"
#include "core/studio/run_log.h"

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
}

EngineWorker::~EngineWorker() {
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
  if (running) timer_->start(speed_limit_ > 0 ? int(1000.0 / speed_limit_) : 0);
  else timer_->stop();
  emit runningChanged(running);
}

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
  emit loadCancelled();
}

void EngineWorker::onLoaded(quint64 generation, std::shared_ptr<StudioInputs> inputs, QString error) {
  if (generation != generation_) return;  // cancelled or superseded
  if (!error.isEmpty()) {
    autoplay_pending_ = false;
    fail(error);
    return;
  }
  inputs_ = std::move(inputs);
  startLive();
}

void EngineWorker::startLive() {
  setRunning(false);
  closeRun();
  replay_.reset();
  engine_.reset();
  analyzer_.reset();
  try {
    StudioConfig config = config_;
    config.capture_layer = std::clamp(view_.layer, 0, inputs_->model->config.n_layers - 1);
    schedule_.set_layer(config.capture_layer);
    engine_ = make_studio_engine(config, *inputs_, makeBackend(config));
    engine_source_ = std::make_unique<EngineSource>(*engine_, &schedule_);
    RunInfo info;
    info.command = config.forced ? "eval" : "stream";
    info.command_line = "h2o-studio";
    info.model_path = inputs_->model_path;
    info.tokenizer_path = inputs_->tokenizer_path;
    info.prompts_path = config.forced ? config.forced_text : config.prompts;
    // Hashing is quick for small files and would stall the start of big ones.
    std::error_code ec;
    const auto size = std::filesystem::file_size(inputs_->model_path, ec);
    info.hash_files = !ec && size < (64u << 20);
    manifest_ = describe_run(*engine_, info);
    analyzer_ = std::make_unique<Analyzer>(make_header(*engine_, manifest_, config.forced ? "forced" : "stream"));
    openSpool();
    loop_ = std::make_unique<RunLoop>(*engine_source_);
    loop_->add_sink(*spool_);
    loop_->add_sink(*analyzer_);
  } catch (const std::bad_alloc&) {
    closeRun();
    engine_.reset();
    fail("Out of memory while starting the engine.");
    return;
  } catch (const std::exception& e) {
    closeRun();
    engine_.reset();
    fail(QString::fromUtf8(e.what()));
    return;
  }
  const Model& m = engine_->model();
  emit loaded(q(model_display_name(m.path)),
              QString("%1 · %2 layers × %3 heads (%4 KV) · vocab %5 · context %6 · %7")
                  .arg(q(m.format))
                  .arg(m.config.n_layers)
                  .arg(m.config.n_heads)
                  .arg(m.config.n_kv_heads)
                  .arg(m.config.vocab_size)
                  .arg(m.config.max_seq_len)
                  .arg(q(engine_->backend().describe())));
  publish(true);
  if (autoplay_pending_) {
    autoplay_pending_ = false;
    setRunning(true);
  }
}

std::unique_ptr<Backend> EngineWorker::makeBackend(const StudioConfig& config) {
  try {
    return make_backend(inputs_->model, studio_backend_options(config));
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    if (config.backend == "cpu") throw;
    // No CUDA in this build, or no GPU: say so and stream on the CPU rather than show nothing.
    emit warned(QString("%1 — running on the CPU instead.").arg(QString::fromUtf8(e.what())));
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
  try {
    auto reader = std::make_unique<RecordingReader>(path.toStdString());
    closeRun();
    engine_.reset();
    inputs_.reset();
    analyzer_ = std::make_unique<Analyzer>(reader->header());
    replay_ = std::move(reader);
    replay_path_ = path;
    manifest_ = analyzer_->header().manifest;
    loop_ = std::make_unique<RunLoop>(*replay_);
    loop_->add_sink(*analyzer_);
  } catch (const std::exception& e) {
    fail(QString::fromUtf8(e.what()));
    return;
  }
  const RecordingHeader& h = analyzer_->header();
  emit loaded(q(h.title) + " (replay)", QString("replay of %1 · %2 layers × %3 heads (%4 KV) · no model needed")
                                            .arg(QFileInfo(path).fileName())
                                            .arg(h.layers)
                                            .arg(h.heads)
                                            .arg(h.kv_heads));
  publish(true);
  if (autoplay_pending_) {
    autoplay_pending_ = false;
    setRunning(true);
  }
}

// ---- playing ----------------------------------------------------------------------

void EngineWorker::play() {
  if (loop_) setRunning(true);
}

void EngineWorker::pause() {
  setRunning(false);
  publish(true);
}

void EngineWorker::stepOnce() {
  setRunning(false);
  if (!loop_) return;
  stepOnceInternal();
  publish(true);
}

void EngineWorker::reset() {
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
  if (running_) timer_->start(speed_limit_ > 0 ? int(1000.0 / speed_limit_) : 0);
}

void EngineWorker::setView(const ViewSelection& view) {
  view_ = view;
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
      emit warned(QString::fromStdString(spool_->stop_reason()) +
                  QString(" at step %1: later steps are shown but not recorded; recordings, logs and reports "
                          "hold steps 0–%1")
                      .arg(spool_->last_step()));
    }
    return true;
  } catch (const std::bad_alloc&) {
    fail("Out of memory in the engine; the run is paused. Lower the budget or reset.");
  } catch (const std::exception& e) {
    fail(QString("Engine step failed: ") + QString::fromUtf8(e.what()));
  }
  return false;
}

void EngineWorker::tick() {
  QElapsedTimer budget;
  budget.start();
  const bool one_per_tick = speed_limit_ > 0;
  do {
    if (!stepOnceInternal()) {
      setRunning(false);
      publish(true);
      finishAutoplayIfDue();
      autoplay_left_ = -1;
      return;
    }
    if (autoplay_left_ > 0 && --autoplay_left_ == 0) {
      setRunning(false);
      publish(true);
      finishAutoplayIfDue();
      return;
    }
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
  auto snapshot = std::make_shared<StudioSnapshot>(analyzer_->snapshot(view_));
  if (slot_->put(std::move(snapshot))) emit snapshotPending();
}

// ---- files -----------------------------------------------------------------------

void EngineWorker::writeRecording(const std::string& path) {
  if (replay_) {
    // A replay is already a recording: copy it as it is.
    std::ifstream in(replay_path_.toStdString(), std::ios::binary);
    AtomicFile out(path, std::ios::out | std::ios::trunc | std::ios::binary);
    out.stream() << in.rdbuf();
    out.commit();
  } else if (engine_ && spool_) {
    spool_->flush();
    std::ifstream in(spool_path_, std::ios::binary);
    AtomicFile out(path, std::ios::out | std::ios::trunc | std::ios::binary);
    out.stream() << in.rdbuf();
    // The engine's totals cover every step: they belong only to a whole recording.
    if (!spool_->stopped()) out.stream() << json_dump(nlohmann::json{{"totals", describe_totals(*engine_)}}) << '\n';
    out.commit();
  } else {
    throw Error("nothing to save: no run yet");
  }
}

void EngineWorker::writeLogs(const std::string& dir) {
  if (!engine_ || !spool_) throw Error("logs are written from a live run (a replay's recording already holds them)");
  spool_->flush();
  RunInfo info;
  info.command = config_.forced ? "eval" : "stream";  // RunLog adds tokens.csv for eval
  info.command_line = "h2o-studio";
  info.model_path = inputs_->model_path;
  info.tokenizer_path = inputs_->tokenizer_path;
  info.prompts_path = config_.forced ? config_.forced_text : config_.prompts;
  info.hash_files = false;
  RunLog log(dir, *engine_, info);
  RecordingReader spool(spool_path_);
  while (auto record = spool.next()) log.write(*record);
  log.close(spool_->stopped() ? "recorded up to step " + std::to_string(spool_->last_step()) + " of " +
                                    std::to_string(engine_->steps() - 1)
                              : running_ ? "running" : "paused");
}

void EngineWorker::writeFile(const QString& path, const QString& action, void (EngineWorker::*writer)(const std::string&)) {
  try {
    (this->*writer)(path.toStdString());
    emit fileWritten(path);
  } catch (const std::exception& e) {
    emit failed(action + " failed: " + QString::fromUtf8(e.what()));
  }
}

void EngineWorker::saveRecording(const QString& path) { writeFile(path, "Saving the recording", &EngineWorker::writeRecording); }

void EngineWorker::exportLogs(const QString& dir) { writeFile(dir, "Exporting the logs", &EngineWorker::writeLogs); }

void EngineWorker::writeReport(const QString& staging, const QString& dir, const QStringList& plots) {
  namespace fs = std::filesystem;
  try {
    ReportContents report;
    report.manifest = manifest_;
    report.steps = analyzer_ ? analyzer_->steps_ingested() : 0;
    for (const QString& p : plots) report.plots.push_back(p.toStdString());
    const std::string folder = staging.toStdString();
    if (engine_) {
      writeLogs(folder);
      report.totals = describe_totals(*engine_);
      report.logs = {"manifest.json", "steps.csv", "steps.jsonl", "evictions.csv"};
    } else if (replay_) {
      report.totals = replay_->totals();
    }
    writeRecording(folder + "/run.h2orec.jsonl");
    report.logs.push_back("run.h2orec.jsonl");
    write_file_atomic(folder + "/summary.md", report_markdown(report));
    // Only a complete report takes its name: one rename of the whole folder.
    fs::rename(folder, dir.toStdString());
    emit reportWritten(dir);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove_all(staging.toStdString(), ignored);
    emit failed("Writing the report failed: " + QString::fromUtf8(e.what()));
  }
}

}  // namespace h2o::ui
