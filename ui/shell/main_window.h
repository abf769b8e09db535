#pragma once
// H2O Studio's window: one pane per policy (side by side, a 2x2 grid or tabs,
// as the size allows), the timeline and view controls always in view, a
// banner for what must not scroll away, the shared curves and the analysis
// tabs (inspector, heavy hitters, head view, model view) under the panes, the
// run's settings in a dock. It starts the engine worker on its own thread,
// draws the snapshots the worker leaves in the mailbox, and forwards the
// user's commands; a change that would restart a run asks first.
#include <QElapsedTimer>
#include <QMainWindow>
#include <QSize>
#include <functional>
#include <memory>
#include <vector>

#include "ui/plot/theme.h"
#include "ui/shell/engine_worker.h"
#include "ui/shell/studio_settings.h"

class QAction;
class QCustomPlot;
class QDragEnterEvent;
class QDropEvent;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTabWidget;
class QThread;
class QTimer;

namespace h2o::ui {

class Banner;
class ControlPanel;
class CurvesPanel;
class HeadView;
class HeavyHitterPanel;
class ModelView;
class NeedleView;
class PaneArea;
class PolicyPane;
class TokenInspector;
class TransportBar;
struct TourStop;

struct MainWindowOptions {
  StudioSettings settings;   // what to start with
  bool persist = true;       // remember changes in QSettings
  bool dialogs = true;       // errors also in a message box (off for tests and screenshots)
  bool perf = false;         // frame-time overlay in the status bar
  QString argv0;             // where to look for the demo's assets
  QString replay;            // open this recording instead of loading a model
  QStringList open;          // files as if dropped onto the window (the command line's: a double-click in a file manager)
  QSize size;  // initial window size; empty: 1800x1000, or the screen's free area where that is smaller
  // The run is recorded to a spool in the temp folder (for Save recording, the
  // logs, reports and the timeline), ~50 KB a step: bounded, so an endless demo stays flat.
  qint64 recording_limit = qint64(512) << 20;  // bytes; 0: no limit
  // Asked before a settings change restarts a run that has steps ("what
  // changes" given); false keeps the run and puts the controls back. Unset:
  // a message box when dialogs are on, else yes.
  std::function<bool(const QString& what)> confirm_restart;
  bool presentation = false;  // start in presentation mode
  QString tab;                // analysis tab to show: "curves", "inspector", "heavy-hitters", "head-view", "model-view"
  bool enlarge_tab = false;   // the analysis tabs take most of the height
  // A talk's needle (--needle, --needle-at, --ask-every): planted once a live run reaches `needle_at`.
  QString needle, needle_question, needle_answer;
  qint64 needle_at = 0, ask_every = 0;
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
  // What a drop, the command line's files or the File menu hand the window (core/studio/opened_files.h):
  // a recording replays; a model (with a tokenizer) starts a live run on it, asking first as a
  // settings change does; what cannot be opened is said in the banner, with what can.
  // Returns whether it started anything (a replay or a run).
  bool openFiles(const QStringList& paths);
  void openModel(const QString& model, const QString& tokenizer);
  const std::vector<RecentModel>& recentModels() const { return recent_; }
  QMenu* recentMenu() const { return recent_menu_; }
  // Tests only (the UI offers live runs and replays): a run fed by synthetic
  // steps of a real model's shape (core/studio/synthetic_steps.h), recorded
  // and analysed beside the source as a live run on a GPU is.
  void startSyntheticRun(const SyntheticStepsSpec& spec);
  void saveRecording(const QString& path);
  // Every plot with data in each format, into `dir`; returns the file names
  // written (none, with an error shown, if one failed).
  QStringList exportPlots(const QString& dir, const QList<int>& formats);
  void exportLogs(const QString& dir);
  // Plots + logs + recording + summary.md into the new folder `dir`, which
  // appears only once complete (finishes on the worker: reportWritten).
  // `written`: the report's instant (utc_timestamp), the same as its folder's stamp.
  void exportReport(const QString& dir, const QString& written = {});

  // For tests and the --perf report.
  std::shared_ptr<const StudioSnapshot> lastSnapshot() const { return last_; }
  const std::vector<PolicyPane*>& panes() const { return panes_; }
  CurvesPanel* curves() const { return curves_; }
  HeavyHitterPanel* heavyHitters() const { return heavy_; }
  TokenInspector* inspector() const { return inspector_; }
  ControlPanel* controls() const { return controls_; }
  TransportBar* transport() const { return transport_; }
  Banner* banner() const { return banner_; }
  PaneArea* paneArea() const { return pane_area_; }
  HeadView* headView() const { return head_view_; }
  ModelView* modelView() const { return model_view_; }
  QTabWidget* analysisTabs() const { return analysis_; }
  QDockWidget* controlsDock() const { return controls_dock_; }
  // Every plot with the file name it exports under: the panes' and the shared ones.
  std::vector<std::pair<QString, QCustomPlot*>> plots() const;
  // The plots a report holds: those of this mode that have data.
  std::vector<std::pair<QString, QCustomPlot*>> reportPlots() const;
  const std::vector<double>& frameTimes() const { return frame_ms_; }
  void inspect(qint64 position, int pane = -1);  // pane: the one clicked, whose token it names
  void setView(int layer, int head);
  void seek(qint64 step);
  void stepBack();
  void goLive();
  void queuePrompt(const QString& text);
  // The needle (main_window_needle.cpp): planted into the live stream, asked for after the next step.
  void plantNeedle(const QString& text, const QString& question = {}, const QString& answer = {});
  void askNeedle();
  NeedleView* needleView() const { return needle_; }
  void setPresentation(bool on);
  bool presentation() const { return presentation_on_; }
  void setLook(ThemeKind theme, double scale);
  void showTab(const QString& name);
  // The analysis tabs take most of the height (the panes keep their minimum): for the teaching views.
  void setAnalysisEnlarged(bool on);
  // Short windows: the panes get what their side-by-side arrangement needs; the analysis tabs the rest.
  void fitPanes();
  int analysisStrip() const;
  // A click on an analysis tab: a shrunk tab bar opens; in a short window the open tab closes.
  void openAnalysis(int index);  // a click on analysis tab `index`
  void setStatsInterval(int seconds);
  // Help (main_window_help.cpp): the guided overview over the window (F1), and every key it takes.
  void showOverview();
  void showShortcuts();
  std::vector<std::pair<QString, QString>> shortcutList() const;  // (what, keys), in the menus' order

 signals:
  void snapshotDrawn();
  void autoplayFinished();
  void errorShown(const QString& message);
  void warningShown(const QString& message);
  void statusShown(const QString& message);
  void loadCancelled();  // the run goes on (e.g. CUDA missing: on the CPU instead)
  void fileWritten(const QString& path);
  void reportWritten(const QString& dir);
  void modelLoaded(const QString& title);
  void replayOpened();

 public slots:
  void drainSnapshots();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void moveEvent(QMoveEvent* event) override;  // fits the framed window into the screen, once
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildActions();
  void buildLayout();
  // The worker's signals: messages (errors, warnings, banners, files written), loading a model, and a live run or a replay beginning.
  void connectWorkerMessages();
  void connectWorkerLoading();
  void connectWorkerRuns();
  QAction* makeAction(IconKind icon, const QString& text, const char* name, const QKeySequence& key, const QString& tip);
  void buildRunActions();
  QMenu* buildNeedleMenu();  // Plant a needle…, Ask for the needle (main_window_needle.cpp)
  QList<QAction*> buildFileActions();
  QList<QAction*> buildOpenActions();  // Open model…, the recent models, Open recording…
  void fillRecentMenu();
  void rememberModel();  // the live run's model, once loaded, first in the recent list
  void buildHelpMenu();  // Overview, Keyboard shortcuts, About (main_window_help.cpp)
  std::vector<TourStop> tourStops() const;
  // The banner's first-run line: the demo was not found, so a synthetic model with random weights runs.
  void sayIfSynthetic(const StudioConfig& chosen, const StudioConfig& running);
  void buildViewActions();
  void buildViews();
  void buildCentral();
  void buildControlsDock();
  void buildTransport();
  void buildStatusBar();
  void fillFateLegend();  // makes legend_ the first time
  void fitFateLegend();
  // One pane per policy, in order (replacing the panes there were).
  void setPanePolicies(const std::vector<PolicyConfig>& policies);
  std::vector<std::pair<QString, QCustomPlot*>> panePlots() const;
  std::vector<std::pair<QString, QCustomPlot*>> sharedPlots() const;
  StudioSettings settings() const;  // the controls' run settings and the transport's view
  void applyRunSettings();
  bool confirmRestart(const QString& what);
  void sendView();
  void persist();
  void draw(const StudioSnapshot& snapshot);
  void drawAnalysis(const StudioSnapshot& snapshot);
  // The status bar says when (and how many) steps the pipeline thinned.
  void showThinning(const StudioSnapshot& snapshot);
  void fillHiddenPlots();
  QStringList writeViewPictures(const QString& dir);  // head-view.png, model-view.png: the files written
  void showError(const QString& message);
  // exportPlots' writer, which throws h2o::Error at the first plot that fails.
  QStringList writePlots(const QString& dir, const QList<int>& formats,
                         const std::vector<std::pair<QString, QCustomPlot*>>& plots);
  void hideLoading();
  void showLoadProgress();  // the status bar's line and the panes' idle state, from loading_what_ and load_permille_
  QString loadLine() const;  // "Loading X … 37 % · 94.2 s"
  void setRunning(bool running);
  void restyle();
  // Runs f on the worker's thread (queued: the GUI never waits).
  template <class F>
  void onWorker(F&& f) {
    QMetaObject::invokeMethod(worker_, std::forward<F>(f), Qt::QueuedConnection);
  }

  MainWindowOptions options_;
  std::shared_ptr<SnapshotSlot> slot_;
  QThread* thread_;
  EngineWorker* worker_;
  std::shared_ptr<const StudioSnapshot> last_;
  ViewSelection view_;
  StudioSettings applied_;  // the settings the current run was started with
  bool have_applied_ = false, replaying_ = false;
  qint64 replay_steps_ = -1;
  bool running_ = false;
  std::vector<double> frame_ms_;
  bool presentation_on_ = false;
  bool fitted_to_screen_ = false;
  bool analysis_open_ = false;  // a short window: the analysis tabs opened (else only their bar)
  double scale_before_presentation_ = 1.0;
  // The live run's speed limit the user chose (steps/s, 0: unlimited), and
  // kPresentationPace while presenting with none chosen (else 0).
  double speed_choice_ = 0, presentation_pace_ = 0;
  double livePace() const;  // the live run's steps/s limit (0: none)
  void applyLivePace();
  // Every pane's answer text at one size (TokenFlowView::setTextScale), one for each mode:
  // presenting starts at kPresentationTextScale; Ctrl+wheel over any pane's text sets the mode's.
  double text_scale_ = 1.0, presentation_text_scale_ = kPresentationTextScale;
  void applyTextScale();

  ControlPanel* controls_;
  QDockWidget* controls_dock_;
  PaneArea* pane_area_;
  std::vector<PolicyPane*> panes_;
  Banner* banner_;
  TransportBar* transport_;
  CurvesPanel* curves_;
  HeavyHitterPanel* heavy_;
  TokenInspector* inspector_;
  HeadView* head_view_;
  ModelView* model_view_;
  NeedleView* needle_;
  QTabWidget* analysis_;
  QSplitter* central_split_;
  QSplitter* bottom_;
  QAction* enlarge_;
  QAction *play_, *step_, *back_, *live_, *reset_, *open_, *save_, *report_, *presentation_, *light_, *bigger_, *smaller_;
  QAction* open_model_;
  QAction *plant_, *ask_;
  QMenu* recent_menu_ = nullptr;
  std::vector<RecentModel> recent_;
  QWidget* legend_ = nullptr;  // the fate colours, in the status bar
  QLabel *perf_label_, *load_label_, *record_label_;
  QLabel* thin_label_;  // shown while the run's pipeline thins steps (core/runtime/step_pipeline.h)
  QLabel* model_label_ = nullptr;  // the loaded weights' type mix (details in its tooltip)
  QProgressBar* load_bar_;
  QPushButton* cancel_load_;
  QTimer* load_ticker_;
  QElapsedTimer load_clock_;
  QString loading_what_;
  int load_permille_ = -1;  // how far the load's weights are made (-1: it reports nothing)
  QTimer* apply_timer_;
  QString model_title_;
};

// A first window without a size asked: 1800x1000, or as much of the screen's free area as there is
// (a 1280x720 projector); `available` empty: no screen known.
QSize first_window_size(QSize available);

}  // namespace h2o::ui
