#pragma once
// The engine's thread. An EngineWorker lives on its own QThread and owns the
// run: h2o::RunLoop (core/studio/run_loop.h) from the Engine (live) or a
// RecordingReader (replay) to the Analyzer that turns steps into snapshots
// and the spool every step is recorded to. The worker adds only threading,
// timing and signals. The GUI talks to it only through queued slots and reads
// its pictures from a LatestSlot; it never waits on it.
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <string>

#include "core/studio/analyzer.h"
#include "core/studio/capture_schedule.h"
#include "core/studio/recording.h"
#include "core/studio/run_loop.h"
#include "core/studio/studio_setup.h"
#include "ui/snapshot_mailbox.h"

class QTimer;

namespace h2o::ui {

struct LoadTicket;
using SnapshotSlot = LatestSlot<StudioSnapshot>;

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  explicit EngineWorker(std::shared_ptr<SnapshotSlot> slot, QObject* parent = nullptr);
  ~EngineWorker() override;

  // Everything below runs on the worker's thread: call through QMetaObject::invokeMethod.
 public slots:
  // Lowers this thread's CPU priority (Linux: nice +5, inherited by the CPU
  // backend's pool threads, which are created from here), so that on a small
  // machine the GUI thread gets the core it needs the moment a frame is due.
  void yieldToGui();
  // Applies settings: reloads the model when its inputs changed, else restarts the run.
  void configure(const h2o::StudioConfig& config);
  void cancelLoad();
  void play();
  void pause();
  void stepOnce();
  void reset();
  // Plays exactly `steps` steps (from whatever is loaded, once it is), then pauses and emits autoplayDone.
  void playSteps(int steps);
  void setSpeedLimit(double steps_per_second);  // 0: as fast as it goes
  // The most the recording spool may hold (0: no limit). Past it, steps are
  // still shown but no longer recorded, and one warning says from which step.
  void setRecordingLimit(qint64 bytes);
  void setView(const h2o::ViewSelection& view);
  void openReplay(const QString& path);
  void saveRecording(const QString& path);
  // Steps, evictions and manifest as h2o::RunLog writes them (live runs only).
  void exportLogs(const QString& dir);
  // Completes a report in `staging`, which already holds `plots`: the logs,
  // the recording and summary.md; then renames `staging` to `dir`. On any
  // failure the staging folder is removed and `dir` never appears.
  void writeReport(const QString& staging, const QString& dir, const QStringList& plots);

 signals:
  void snapshotPending();
  void loading(const QString& what);
  void loaded(const QString& title, const QString& details);
  void failed(const QString& message);
  void warned(const QString& message);
  void loadCancelled();  // something was substituted; the run goes on
  void status(const QString& message);
  void runningChanged(bool running);
  void autoplayDone();
  void fileWritten(const QString& path);
  void reportWritten(const QString& dir);

 private slots:
  void tick();

 private:
  void onLoaded(quint64 generation, std::shared_ptr<StudioInputs> inputs, QString error);
  void startLive();  // a fresh engine on the loaded inputs
  // The chosen backend, or the CPU (with a warning) when that one cannot start.
  std::unique_ptr<Backend> makeBackend(const StudioConfig& config);
  bool stepOnceInternal();  // false when the run has nothing more to give
  void publish(bool force);
  void setRunning(bool running);
  void openSpool();
  void closeRun();  // drops the loop, its source and its sinks
  void fail(const QString& message);
  // The file writers behind the slots above; they throw h2o::Error.
  void writeRecording(const std::string& path);
  void writeLogs(const std::string& dir);
  // Runs one of the writers above and says how it went (fileWritten, or failed naming `action`).
  void writeFile(const QString& path, const QString& action, void (EngineWorker::*writer)(const std::string&));
  void finishAutoplayIfDue();

  std::shared_ptr<SnapshotSlot> slot_;
  QTimer* timer_;
  std::shared_ptr<LoadTicket> ticket_;
  quint64 generation_ = 0;  // of the newest load; older results are discarded

  StudioConfig config_;
  bool have_config_ = false;
  std::shared_ptr<StudioInputs> inputs_;
  StudioCaptureSchedule schedule_;           // what each live step reads out
  std::unique_ptr<Engine> engine_;           // live runs
  std::unique_ptr<EngineSource> engine_source_;
  std::unique_ptr<RecordingReader> replay_;  // replays
  QString replay_path_;
  std::unique_ptr<Analyzer> analyzer_;
  std::unique_ptr<RecordingWriter> spool_;   // live runs: every step, up to recording_limit_
  std::unique_ptr<RunLoop> loop_;
  ViewSelection view_;
  nlohmann::json manifest_;

  std::string spool_path_;
  qint64 recording_limit_ = 0;
  bool spool_stop_told_ = false;

  bool running_ = false;
  double speed_limit_ = 0;
  int autoplay_left_ = -1;  // -1: no autoplay
  bool autoplay_pending_ = false;
  QElapsedTimer since_publish_;
};

}  // namespace h2o::ui

Q_DECLARE_METATYPE(h2o::StudioConfig)
Q_DECLARE_METATYPE(h2o::ViewSelection)
