#pragma once
// H2O Studio's window: one pane per policy side by side (1 to 4), the shared curves,
// heavy-hitter analytics and the token inspector under them, the controls in
// a dock. It starts the engine worker on its own thread, draws the snapshots
// the worker leaves in the mailbox, and forwards the user's commands.
#include <QElapsedTimer>
#include <QMainWindow>
#include <QSize>
#include <memory>
#include <vector>

#include "ui/engine_worker.h"
#include "ui/studio_settings.h"

class QAction;
class QCustomPlot;
class QDockWidget;
class QLabel;
class QProgressBar;
class QPushButton;
class QSplitter;
class QThread;
class QTimer;

namespace h2o::ui {

class ControlPanel;
class CurvesPanel;
class HeavyHitterPanel;
class PolicyPane;
class TokenInspector;

struct MainWindowOptions {
  StudioSettings settings;   // what to start with
  bool persist = true;       // remember changes in QSettings
  bool dialogs = true;       // errors also in a message box (off for tests and screenshots)
  bool perf = false;         // frame-time overlay in the status bar
  QString argv0;             // where to look for the demo's assets
  QString replay;            // open this recording instead of loading a model
  QSize size{1800, 1000};    // initial window size
  // The run is recorded to a spool in the temp folder (for Save recording, the
  // logs and reports), ~50 KB a step: bounded, so an endless demo stays flat.
  qint64 recording_limit = qint64(512) << 20;  // bytes; 0: no limit
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(MainWindowOptions options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts the run (loads the model, or opens the replay).
  void start();
  void playSteps(int steps);
  void openReplay(const QString& path);
  void saveRecording(const QString& path);
  // Every plot in each format, into `dir`; returns the file names written
  // (none, with an error shown, if one failed).
  QStringList exportPlots(const QString& dir, const QList<int>& formats);
  void exportLogs(const QString& dir);
  // Plots + logs + recording + summary.md into the new folder `dir`, which
  // appears only once complete (finishes on the worker: reportWritten).
  void exportReport(const QString& dir);

  // For tests and the --perf report.
  std::shared_ptr<const StudioSnapshot> lastSnapshot() const { return last_; }
  const std::vector<PolicyPane*>& panes() const { return panes_; }
  CurvesPanel* curves() const { return curves_; }
  HeavyHitterPanel* heavyHitters() const { return heavy_; }
  TokenInspector* inspector() const { return inspector_; }
  ControlPanel* controls() const { return controls_; }
  // Every plot with the file name it exports under: the panes' and the shared ones.
  std::vector<std::pair<QString, QCustomPlot*>> plots() const;
  const std::vector<double>& frameTimes() const { return frame_ms_; }
  void inspect(qint64 position);
  void setView(int layer, int head);

 signals:
  void snapshotDrawn();
  void autoplayFinished();
  void errorShown(const QString& message);
  void warningShown(const QString& message);
  void loadCancelled();  // the run goes on (e.g. CUDA missing: on the CPU instead)
  void fileWritten(const QString& path);
  void reportWritten(const QString& dir);
  void modelLoaded(const QString& title);

 public slots:
  void drainSnapshots();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildActions();
  void buildLayout();
  // One pane per policy, in order (replacing the panes there were).
  void setPanePolicies(const std::vector<PolicyConfig>& policies);
  std::vector<std::pair<QString, QCustomPlot*>> panePlots() const;
  std::vector<std::pair<QString, QCustomPlot*>> sharedPlots() const;
  void applyRunSettings();
  void sendView();
  void draw(const StudioSnapshot& snapshot);
  void showError(const QString& message);
  // exportPlots' writer, which throws h2o::Error at the first plot that fails.
  QStringList writePlots(const QString& dir, const QList<int>& formats);
  void hideLoading();
  void setRunning(bool running);
  template <class F>
  void onWorker(F&& f);  // runs f on the worker's thread

  MainWindowOptions options_;
  std::shared_ptr<SnapshotSlot> slot_;
  QThread* thread_;
  EngineWorker* worker_;
  std::shared_ptr<const StudioSnapshot> last_;
  ViewSelection view_;
  bool running_ = false;
  std::vector<double> frame_ms_;

  ControlPanel* controls_;
  QDockWidget* controls_dock_;
  QSplitter* panes_splitter_;
  std::vector<PolicyPane*> panes_;
  CurvesPanel* curves_;
  HeavyHitterPanel* heavy_;
  TokenInspector* inspector_;
  QAction *play_, *step_, *reset_;
  QLabel *step_label_, *perf_label_, *load_label_;
  QProgressBar* load_bar_;
  QPushButton* cancel_load_;
  QTimer* load_ticker_;
  QElapsedTimer load_clock_;
  QString loading_what_;
  QTimer* apply_timer_;
  QString model_title_;
};

}  // namespace h2o::ui
