#pragma once
// The engine's thread. An EngineWorker lives on its own QThread and holds the
// run: an h2o::StudioRun (core/studio/studio_run.h) — a live engine or a
// replayed recording, the loop that feeds the Analyzer, the spool every step
// is recorded to, the timeline over what was seen, the exports. The run is
// plain C++; the worker adds only threading, timing and signals. The GUI
// talks to it only through queued slots and reads its pictures from a
// LatestSlot; it never waits on it.
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <mutex>
#include <string>

#include "core/analysis/snapshot_cadence.h"
#include "core/studio/studio_run.h"
#include "ui/shell/snapshot_mailbox.h"

class QTimer;

namespace h2o::ui {

struct LoadTicket;
struct LoadMeter;
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
  void stepOnce();   // one step forward: through the history from the cursor, else a new step
  void stepBack();   // one step back on the timeline (pauses)
  void seek(qint64 step);  // show this step (pauses); past the newest: a replay reads on to it
  void goLive();     // follow the newest step again
  void reset();
  // Plays exactly `steps` steps (from whatever is loaded, once it is), then pauses and emits autoplayDone.
  // As fast as the engine goes, whatever the speed limit: a scripted run
  // (--autoplay-steps, a screenshot, a test) wants its steps, not a pace.
  void playSteps(int steps);
  void setSpeedLimit(double steps_per_second);  // live runs played with Play; 0: as fast as it goes
  void setReplayPace(double times);             // replays: times the recorded pace; 0: as fast as it reads
  // A prompt typed into the live stream (Engine::queue_turn): it follows the current turn.
  void queuePrompt(const QString& text);
  // The needle (core/studio/needle_source.h): planted into the live stream
  // when the current turn ends (question and answer empty: from "the X is
  // Y"), and asked for after the next step — at once, one step on, when paused.
  void plantNeedle(const QString& text, const QString& question, const QString& answer);
  void askNeedle();
  // A talk's script: plant `text` once a live run reaches `at_step` (-1: no
  // needle), ask every `ask_every` steps after (0: never); applied to every live run from now on.
  void setNeedlePlan(const QString& text, const QString& question, const QString& answer, qint64 at_step,
                     qint64 ask_every);
  // Prints one line of memory figures on stdout every `seconds` (0: off), for scripts/soak_studio.sh.
  void setStatsInterval(int seconds);
  // The most the recording spool may hold (0: no limit). Past it, steps are
  // still shown but no longer recorded, and one warning says from which step.
  void setRecordingLimit(qint64 bytes);
  void setView(const h2o::ViewSelection& view);
  void openReplay(const QString& path);
  // Tests only: a run fed by synthetic steps (StudioRun::synthetic), its sinks beside the source.
  void startSynthetic(const h2o::SyntheticStepsSpec& spec);
  void saveRecording(const QString& path);
  // Steps, evictions and manifest as h2o::RunLog writes them (live runs only).
  void exportLogs(const QString& dir);
  // Completes a report in `staging`, which already holds `plots`: the logs,
  // the recording and summary.md; then renames `staging` to `dir`. On any
  // failure the staging folder is removed and `dir` never appears.
  // `written`: the report's instant (utc_timestamp), the same as the folder's stamp.
  void writeReport(const QString& staging, const QString& dir, const QStringList& plots, const QString& written);

 signals:
  void snapshotPending();
  void loading(const QString& what);
  // How much of the model's weights are made (0..1), while a load that makes them runs (load_model).
  void loadProgress(double fraction);
  // `types`: the weights' type mix ("F32", "Q4_K_M"), kept in the status bar.
  void loaded(const QString& title, const QString& details, const QString& types);
  void failed(const QString& message);
  void warned(const QString& message);
  void loadCancelled();  // something was substituted; the run goes on
  void status(const QString& message);
  void runningChanged(bool running);
  // A message that stays until cleared (empty text): "backend", "model", "recording".
  void banner(const QString& key, const QString& text);
  // A replay was opened: the view and the settings it was recorded with, and its length in steps.
  void replayOpened(int layer, int head, const h2o::StudioConfig& settings, qint64 steps);
  // A live run started: the prompt box applies (stream mode) or not.
  void liveStarted(bool accepts_prompts);
  void autoplayDone();
  void fileWritten(const QString& path);
  void reportWritten(const QString& dir);

 private slots:
  void tick();

 private:
  void onLoaded(quint64 generation, std::shared_ptr<StudioInputs> inputs, QString error);
  void stopLoadThread();  // the newest load's thread stops making weights nobody will use
  void startLive();  // a fresh engine on the loaded inputs
  // A run just started: the window hears what it is and sees it, and a waiting autoplay begins.
  void runStarted();
  // The chosen backend, or the CPU (with a warning) when that one cannot start.
  std::unique_ptr<Backend> makeBackend(const StudioConfig& config);
  // A new file name for a live run's spool, in the system's temporary folder.
  std::string newSpoolPath() const;
  // One step of a Play tick; false (paused, last frame published) when the
  // run ended or autoplay's last step was taken.
  bool stepForTick();
  // Says what stepping said (warned, banner, status, failed); returns whether it stepped.
  bool report(const StepResult& result);
  void warn(const std::string& warning);  // nothing when empty
  void publish(bool force);
  // A snapshot when the cadence says so; on this thread, or on the sinks' where they build them (runBeside).
  void buildSnapshot(const StudioRun& run, bool force);
  // The new run's sinks (and its snapshots) beside the engine where it runs them so (StudioRun::run_beside).
  void runBeside();
  // The tick interval for the current run (tick_interval_ms).
  void restartTimer();
  bool isReplay() const { return run_ && run_->is_replay(); }
  void printStats();
  void setRunning(bool running);
  void fail(const QString& message);
  // Runs one of RunExport's writers and says how it went (fileWritten, or failed naming `action`).
  void writeFile(const QString& path, const QString& action, void (RunExport::*writer)(const std::string&) const);
  // The run as the exports see it now.
  RunExport runExport() const;
  void finishAutoplayIfDue();
  // The needle plan's plant, once the live run has reached its step.
  void plantIfDue();

  std::shared_ptr<SnapshotSlot> slot_;
  QTimer* timer_;
  std::shared_ptr<LoadTicket> ticket_;
  std::shared_ptr<LoadMeter> load_meter_;  // the newest load's progress and stop flag
  QTimer* load_poll_;                      // reads it for loadProgress while that load runs
  int load_shown_ = -1;                    // the permille loadProgress last said
  quint64 generation_ = 0;  // of the newest load; older results are discarded

  StudioConfig config_;
  bool have_config_ = false;
  std::shared_ptr<StudioInputs> inputs_;
  std::unique_ptr<StudioRun> run_;  // null: none yet, or the last one failed to start
  ViewSelection view_;
  qint64 recording_limit_ = 0;

  bool running_ = false;
  double speed_limit_ = 0;
  double liveLimit() const { return autoplay_left_ > 0 ? 0 : speed_limit_; }  // the limit this tick keeps
  ReplayPace pace_;
  QElapsedTimer wall_;                        // the pace's clock
  QString unusable_;                          // why there is no run (Play says it)
  bool loading_ = false;
  QTimer* stats_timer_ = nullptr;
  QElapsedTimer stats_clock_;
  int autoplay_left_ = -1;  // -1: no autoplay
  struct NeedlePlan {
    QString text, question, answer;
    qint64 at_step = -1, ask_every = 0;
    bool planted = false;  // in the current live run
  } needle_plan_;
  bool autoplay_pending_ = false;
  // The cadence, its clock and the view a snapshot shows: taken on this thread
  // and on the sinks' (where the run is beside(): runBeside), under publish_mutex_.
  std::mutex publish_mutex_;
  QElapsedTimer since_start_;
  SnapshotCadence cadence_;
};

}  // namespace h2o::ui

Q_DECLARE_METATYPE(h2o::StudioConfig)
Q_DECLARE_METATYPE(h2o::ViewSelection)
