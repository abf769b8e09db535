#include "ui/shell/main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QScreen>
#include <QSplitter>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QThread>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <ctime>
#include <map>
#include <qcustomplot.h>

#include "core/base/error.h"
#include "core/base/format.h"
#include "ui/shell/banner.h"
#include "ui/shell/control_panel.h"
#include "ui/views/curves_panel.h"
#include "ui/shell/frame_stats.h"
#include "ui/views/head_view.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/heavy_hitter_panel.h"
#include "ui/views/model_view.h"
#include "ui/views/needle_view.h"
#include "ui/shell/pane_area.h"
#include "ui/plot/plot_context_menu.h"
#include "ui/plot/plot_export.h"
#include "ui/plot/plot_helpers.h"
#include "ui/views/policy_pane.h"
#include "ui/views/raster_plot.h"
#include "ui/views/token_flow_view.h"
#include "ui/views/token_inspector.h"
#include "ui/shell/transport_bar.h"

namespace h2o::ui {

namespace {

// The panes a configuration asks for; its kinds with their defaults when its
// numbers do not make a valid policy yet (the run will say why).
std::vector<PolicyConfig> configured_policies(const StudioConfig& config) {
  try {
    return studio_policies(config);
  } catch (const std::exception&) {
    std::vector<PolicyConfig> out;
    for (const std::string& name : config.policies) {
      try {
        out.push_back(PolicyConfig::named(name));
      } catch (const std::exception&) {
      }
    }
    return out;
  }
}

}  // namespace

QSize first_window_size(QSize available) {
  const QSize wanted(1800, 1000);
  if (available.isEmpty()) return wanted;
  // The title bar and frame come on top of the window's own size.
  return wanted.boundedTo(available - QSize(0, 32)).expandedTo(QSize(640, 480));
}

MainWindow::MainWindow(MainWindowOptions options, QWidget* parent)
    : QMainWindow(parent), options_(std::move(options)), slot_(std::make_shared<SnapshotSlot>()) {
  setWindowTitle("H2O Studio");
  const QScreen* screen = QGuiApplication::primaryScreen();
  resize(options_.size.isValid() ? options_.size : first_window_size(screen ? screen->availableGeometry().size() : QSize()));
  thread_ = new QThread(this);
  thread_->setObjectName("h2o-engine");
  worker_ = new EngineWorker(slot_);
  worker_->moveToThread(thread_);
  connect(thread_, &QThread::finished, worker_, &QObject::deleteLater);
  thread_->start();
  onWorker([w = worker_] { w->yieldToGui(); });  // before any backend makes its threads
  onWorker([w = worker_, limit = options_.recording_limit] { w->setRecordingLimit(limit); });

  buildActions();
  buildLayout();
  for (const auto& [name, plot] : sharedPlots()) add_export_menu(plot, name);
  connectWorkerMessages();
  connectWorkerLoading();
  connectWorkerRuns();
}

void MainWindow::connectWorkerMessages() {
  connect(worker_, &EngineWorker::snapshotPending, this, &MainWindow::drainSnapshots);
  connect(worker_, &EngineWorker::failed, this, &MainWindow::showError);
  connect(worker_, &EngineWorker::warned, this, [this](const QString& m) {
    statusBar()->showMessage("Warning: " + m, 20000);
    emit warningShown(m);
  });
  connect(worker_, &EngineWorker::banner, this, [this](const QString& key, const QString& text) {
    banner_->set(key, text);
    if (key == "recording" && !text.isEmpty()) record_label_->setText("● " + text);
  });
  connect(worker_, &EngineWorker::status, this, [this](const QString& m) {
    statusBar()->showMessage(m, 8000);
    emit statusShown(m);
  });
  connect(worker_, &EngineWorker::runningChanged, this, &MainWindow::setRunning);
  connect(worker_, &EngineWorker::autoplayDone, this, [this] {
    drainSnapshots();
    emit autoplayFinished();
  });
  connect(worker_, &EngineWorker::fileWritten, this, [this](const QString& p) {
    statusBar()->showMessage("Wrote " + p, 8000);
    emit fileWritten(p);
  });
  connect(worker_, &EngineWorker::reportWritten, this, [this](const QString& d) {
    statusBar()->showMessage("Report written to " + d, 10000);
    emit reportWritten(d);
  });
}

void MainWindow::connectWorkerLoading() {
  connect(worker_, &EngineWorker::loading, this, [this](const QString& what) {
    loading_what_ = what;
    load_permille_ = -1;
    load_clock_.start();
    load_ticker_->start();
    load_bar_->setRange(0, 0);  // busy until the loader says how far it is (a file's mapping says nothing)
    showLoadProgress();
    for (QWidget* w : {static_cast<QWidget*>(load_label_), static_cast<QWidget*>(load_bar_),
                       static_cast<QWidget*>(cancel_load_)})
      w->show();
  });
  connect(worker_, &EngineWorker::loadProgress, this, [this](double fraction) {
    const int permille = int(std::lround(fraction * 1000));
    const bool new_percent = permille / 10 != load_permille_ / 10;
    load_permille_ = permille;
    load_bar_->setRange(0, 1000);
    load_bar_->setValue(permille);
    if (new_percent) showLoadProgress();
  });
  connect(worker_, &EngineWorker::loadCancelled, this, [this] {
    hideLoading();
    for (PolicyPane* pane : panes_) pane->showIdle("no model loaded (its loading was cancelled)");
    statusBar()->showMessage("Loading cancelled: no model loaded (Reset or a new setting loads again).", 15000);
    emit loadCancelled();
  });
  connect(worker_, &EngineWorker::loaded, this, [this](const QString& title, const QString& details,
                                                        const QString& types) {
    hideLoading();
    for (PolicyPane* pane : panes_) pane->showIdle("starting the run …");
    model_title_ = title;
    setWindowTitle("H2O Studio — " + title);
    statusBar()->showMessage(details, 15000);
    model_label_->setText(types);
    model_label_->setToolTip(details);
    if (!replaying_) rememberModel();
    emit modelLoaded(title);
  });
}

void MainWindow::connectWorkerRuns() {
  connect(worker_, &EngineWorker::liveStarted, this, [this](bool prompts) {
    replaying_ = false;
    replay_steps_ = -1;
    transport_->setReplay(false);
    transport_->setSpeed(livePace());
    transport_->setPromptEnabled(prompts, "Typed prompts join the MT-Bench stream; teacher-forced mode scores a fixed text");
    record_label_->setText(options_.recording_limit > 0
                               ? QString("● recording (up to %1 MiB)").arg(options_.recording_limit >> 20)
                               : "● recording");
  });
  connect(worker_, &EngineWorker::replayOpened, this,
          [this](int layer, int head, const StudioConfig& settings, qint64 steps) {
            replaying_ = true;
            replay_steps_ = steps;
            setView(layer, head);
            transport_->setReplay(true);
            transport_->setSpeed(1.0);
            onWorker([w = worker_] { w->setReplayPace(1.0); });
            transport_->setPromptEnabled(false, "A replay plays what was recorded: prompts join live runs");
            // Shown as recorded (not remembered, not applied: a change asks to start a live run).
            controls_->setConfig(settings);
            applied_.config = controls_->config();
            have_applied_ = true;
            // Beside the model label's "replay": what the file holds.
            record_label_->setText(QString("%1 steps recorded").arg(steps));
            banner_->clear("demo");
            emit replayOpened();
          });
}

MainWindow::~MainWindow() {
  thread_->quit();
  thread_->wait();
}

void MainWindow::setPanePolicies(const std::vector<PolicyConfig>& policies) {
  std::vector<PolicyPane*> panes;
  for (const PolicyConfig& policy : policies) {
    auto* pane = new PolicyPane(policy);
    const int index = int(panes.size());
    connect(pane, &PolicyPane::positionClicked, this, [this, index](qint64 position) { inspect(position, index); });
    connect(pane, &PolicyPane::detailRequested, this, [this](qint64 first, int count) {
      if (count < 0) {
        // The overview: centre the detail on the clicked position; near the end, follow the end.
        const int64_t length = last_ && !last_->panes.empty() ? last_->panes.front().stream_length : 0;
        first = first - view_.detail_positions / 2;
        view_.detail_first = first + view_.detail_positions >= length ? -1 : std::max<qint64>(0, first);
      } else {
        view_.detail_first = first;
        view_.detail_positions = count;
      }
      sendView();
    });
    connect(pane, &PolicyPane::rasterPixels, this, [this](QSize, QSize) {
      // A cell at least 2x2 pixels, by the smallest pane: sinks and heavy hitters
      // never fall between pixels when the map is scaled to the axis rect.
      int ow = 1 << 20, oh = 1 << 20, dw = 1 << 20, dh = 1 << 20;
      for (PolicyPane* p : panes_) {
        if (!p->isVisible()) continue;
        ow = std::min(ow, p->overview()->axisRect()->width());
        oh = std::min(oh, p->overview()->axisRect()->height());
        dw = std::min(dw, p->raster()->axisRect()->width());
        dh = std::min(dh, p->raster()->axisRect()->height());
      }
      if (ow == 1 << 20) return;
      const ViewSelection before = view_;
      view_.overview_columns = std::max(16, ow / 2);
      view_.overview_rows = std::max(8, oh / 2);
      view_.detail_columns = std::max(16, dw / 2);
      view_.detail_rows = std::max(8, dh / 2);
      if (before.overview_columns != view_.overview_columns || before.overview_rows != view_.overview_rows ||
          before.detail_columns != view_.detail_columns || before.detail_rows != view_.detail_rows)
        sendView();
    });
    connect(pane, &PolicyPane::textScrollRequested, this, [this](qint64 first) {
      view_.text_first = first;
      sendView();
    });
    connect(pane->text(), &TokenFlowView::textScaleRequested, this, [this](double scale) {
      (presentation_on_ ? presentation_text_scale_ : text_scale_) =
          std::clamp(scale, TokenFlowView::kLeastTextScale, TokenFlowView::kMostTextScale);
      applyTextScale();
    });
    panes.push_back(pane);
  }
  panes_ = panes;
  pane_area_->setPanes(std::move(panes));
  applyTextScale();
  QTimer::singleShot(0, this, &MainWindow::fitPanes);  // another count may need another height
  for (const auto& [name, plot] : panePlots()) add_export_menu(plot, name);
}

void MainWindow::buildLayout() {
  buildViews();
  buildCentral();
  buildControlsDock();
  buildTransport();
  buildStatusBar();
}

// The panes, the curves and the analysis tabs (the teaching views), and what they ask of the window.
void MainWindow::buildViews() {
  pane_area_ = new PaneArea;
  banner_ = new Banner;
  curves_ = new CurvesPanel;
  heavy_ = new HeavyHitterPanel;
  inspector_ = new TokenInspector;
  head_view_ = new HeadView;
  model_view_ = new ModelView;
  needle_ = new NeedleView;
  analysis_ = new QTabWidget;
  analysis_->setObjectName("analysis");
  analysis_->setDocumentMode(true);
  analysis_->addTab(inspector_, "Inspector");
  analysis_->addTab(heavy_, "Heavy hitters");
  analysis_->addTab(head_view_, "Head view");
  analysis_->addTab(model_view_, "Model view");
  analysis_->addTab(needle_, "Needle");
  // The teaching views want room: a corner button gives the tabs most of the height.
  enlarge_ = new QAction("Enlarge", this);
  enlarge_->setObjectName("enlarge_analysis");
  enlarge_->setCheckable(true);
  enlarge_->setShortcut(QKeySequence("Ctrl+Shift+M"));
  enlarge_->setToolTip("Give the analysis tabs most of the height (Ctrl+Shift+M)");
  connect(enlarge_, &QAction::toggled, this, &MainWindow::setAnalysisEnlarged);
  auto* corner = new QToolButton;
  corner->setDefaultAction(enlarge_);
  corner->setAutoRaise(true);
  analysis_->setCornerWidget(corner, Qt::TopRightCorner);
  connect(analysis_, &QTabWidget::currentChanged, this, [this] {
    if (last_) drawAnalysis(*last_);
  });
  connect(analysis_->tabBar(), &QTabBar::tabBarClicked, this, &MainWindow::openAnalysis);
  setPanePolicies(configured_policies(options_.settings.config));
  bottom_ = new QSplitter(Qt::Horizontal);
  bottom_->addWidget(curves_);
  bottom_->addWidget(analysis_);
  bottom_->setSizes({1000, 900});  // proportions: the splitter scales them to its width
  bottom_->setChildrenCollapsible(false);
  connect(inspector_, &TokenInspector::followRequested, this, [this] { inspect(-1); });
  connect(head_view_, &HeadView::positionClicked, this, &MainWindow::inspect);
  connect(head_view_, &HeadView::queryStepRequested, this, [this](qint64 step) {
    view_.query_step = step;
    sendView();
  });
  connect(model_view_, &ModelView::cellClicked, this, [this](int layer, int head) {
    transport_->setView(layer, head);
    view_.layer = layer;
    view_.head = head;
    sendView();
  });
  connect(model_view_, &ModelView::policyChosen, this, [this](int policy) {
    view_.model_view_policy = policy;
    sendView();
  });
}

// Banners over the panes, the analysis area under them.
void MainWindow::buildCentral() {
  central_split_ = new QSplitter(Qt::Vertical);
  central_split_->addWidget(pane_area_);
  central_split_->addWidget(bottom_);
  central_split_->setStretchFactor(0, 3);
  central_split_->setStretchFactor(1, 1);
  central_split_->setSizes({700, 260});
  central_split_->setChildrenCollapsible(false);
  auto* central = new QWidget;
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(0);
  v->addWidget(banner_);
  v->addWidget(central_split_, 1);
  setCentralWidget(central);

}

// The controls, in a dock; a burst of changes applies once.
void MainWindow::buildControlsDock() {
  controls_ = new ControlPanel;
  controls_->setConfig(options_.settings.config);
  StudioConfig defaults;  // empty inputs: what the demo falls back to
  fill_default_inputs(defaults, options_.argv0);
  controls_->setDefaultInputs(defaults);
  auto* scroll = new QScrollArea;
  scroll->setWidget(controls_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  // Scrolls vertically; sideways only where a larger --ui-scale makes the fields wider than the dock
  // (at 2 its policies' second column was cut off, unreachable), which keeps the panes their width.
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  const int dock_width = controls_->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() + 4;
  scroll->setMinimumWidth(std::min(dock_width, 300));
  auto* dock = new QDockWidget("Controls");
  dock->setObjectName("controls");
  dock->setWidget(scroll);
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                    QDockWidget::DockWidgetClosable);
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  resizeDocks({dock}, {std::min(dock_width, 300)}, Qt::Horizontal);

  apply_timer_ = new QTimer(this);
  apply_timer_->setSingleShot(true);
  apply_timer_->setInterval(400);  // settle after a burst of spin-box clicks
  connect(apply_timer_, &QTimer::timeout, this, &MainWindow::applyRunSettings);
  connect(controls_, &ControlPanel::runSettingsChanged, apply_timer_, qOverload<>(&QTimer::start));
  dock->toggleViewAction()->setShortcut(QKeySequence("Ctrl+K"));
  controls_dock_ = dock;
  menuBar()->findChild<QMenu*>("view_menu")->insertAction(presentation_, dock->toggleViewAction());
}

// The transport bar: one toolbar line, never scrolled away (files and the rest are in the menus,
// with their shortcuts).
void MainWindow::buildTransport() {
  transport_ = new TransportBar(back_, play_, step_, live_, {reset_, report_, presentation_});
  transport_->setView(options_.settings.config.capture_layer, options_.settings.head);
  speed_choice_ = options_.settings.speed_limit;
  transport_->setSpeed(speed_choice_);
  connect(transport_, &TransportBar::seekRequested, this, &MainWindow::seek);
  connect(transport_, &TransportBar::viewChanged, this, [this](int layer, int head) {
    view_.layer = layer;
    view_.head = head;
    persist();
    sendView();
  });
  connect(transport_, &TransportBar::speedChanged, this, [this](double v) {
    if (replaying_) {
      onWorker([w = worker_, v] { w->setReplayPace(v); });
    } else {
      onWorker([w = worker_, v] { w->setSpeedLimit(v); });
      speed_choice_ = v;
      presentation_pace_ = 0;  // chosen: kept, "unlimited" included
      persist();
    }
  });
  connect(transport_, &TransportBar::promptSubmitted, this, &MainWindow::queuePrompt);
  connect(transport_, &TransportBar::needleSubmitted, this, [this](const QString& text) { plantNeedle(text); });
  auto* timeline = addToolBar("Timeline");
  timeline->setObjectName("timeline_bar");
  timeline->setMovable(false);
  timeline->addWidget(transport_);

}

// Loading progress, the model's weight types, the fate legend, frame time and recording state.
void MainWindow::buildStatusBar() {
  perf_label_ = new QLabel;
  load_label_ = new QLabel;
  record_label_ = new QLabel;
  record_label_->setObjectName("record_label");
  load_bar_ = new QProgressBar;
  load_bar_->setRange(0, 0);  // the loaders report no fraction: a busy bar and the time so far
  load_ticker_ = new QTimer(this);
  load_ticker_->setInterval(200);
  connect(load_ticker_, &QTimer::timeout, this, [this] { load_label_->setText(loadLine()); });
  load_bar_->setMaximumWidth(160);
  load_label_->setObjectName("load_label");
  cancel_load_ = new QPushButton("Cancel");
  cancel_load_->setObjectName("cancel_load");
  cancel_load_->setToolTip("Stop waiting for this model (its result is discarded)");
  connect(cancel_load_, &QPushButton::clicked, this, [this] { onWorker([w = worker_] { w->cancelLoad(); }); });
  for (QWidget* w : {static_cast<QWidget*>(load_label_), static_cast<QWidget*>(load_bar_),
                     static_cast<QWidget*>(cancel_load_)}) {
    statusBar()->addPermanentWidget(w);
    w->hide();
  }
  model_label_ = new QLabel;
  model_label_->setObjectName("model_types");
  statusBar()->addPermanentWidget(model_label_);
  fillFateLegend();
  statusBar()->addPermanentWidget(legend_);
  // A message (an error, what was loaded or written) is read in the legend's place: beside it, a
  // full status bar left the message a few letters.
  connect(statusBar(), &QStatusBar::messageChanged, this, [this](const QString& message) {
    legend_->setVisible(message.isEmpty());
    if (message.isEmpty()) fitFateLegend();
  });
  statusBar()->addPermanentWidget(perf_label_);
  statusBar()->addPermanentWidget(record_label_);
  thin_label_ = new QLabel;
  thin_label_->setObjectName("thin_label");
  statusBar()->addPermanentWidget(thin_label_);
  thin_label_->hide();
  perf_label_->setVisible(options_.perf);
}

StudioSettings MainWindow::settings() const {
  StudioSettings s;
  s.config = controls_->config();
  s.config.capture_layer = transport_->layer();
  s.head = transport_->head();
  s.speed_limit = speed_choice_;  // not the transport's: a replay's pace, or the presentation's
  s.theme = theme_name(current_theme()).toStdString();
  s.ui_scale = presentation_on_ ? scale_before_presentation_ : ui_scale();
  s.text_scale = text_scale_;
  s.presentation_text_scale = presentation_text_scale_;
  return s;
}

void MainWindow::persist() {
  if (!options_.persist || replaying_) return;
  QSettings settings;
  save_settings(settings, this->settings());
}

void MainWindow::start() {
  view_.layer = transport_->layer();
  view_.head = transport_->head();
  text_scale_ = options_.settings.text_scale;
  if (options_.settings.presentation_text_scale > 0) presentation_text_scale_ = options_.settings.presentation_text_scale;
  applyTextScale();
  setLook(theme_from_name(QString::fromStdString(options_.settings.theme)), options_.settings.ui_scale);
  if (options_.presentation) presentation_->setChecked(true);
  // Remembered settings a run refused (studio_settings.h): said once, in the banner, where the user looks.
  QStringList refused;
  for (const std::string& line : options_.settings.refused) refused << QString::fromStdString(line);
  banner_->set("settings", refused.join('\n'));
  if (!options_.tab.isEmpty()) showTab(options_.tab);
  if (options_.enlarge_tab) QTimer::singleShot(0, this, [this] { setAnalysisEnlarged(true); });
  if (!options_.needle.isEmpty() || options_.ask_every > 0)
    onWorker([w = worker_, o = options_] {
      w->setNeedlePlan(o.needle, o.needle_question, o.needle_answer, o.needle.isEmpty() ? -1 : o.needle_at, o.ask_every);
    });
  if (!options_.replay.isEmpty()) {
    openReplay(options_.replay);
    return;
  }
  // Files on the command line (a double-click in a file manager) open as a drop would; else the settings' run.
  if (options_.open.isEmpty() || !openFiles(options_.open)) applyRunSettings();
  sendView();
}

bool MainWindow::confirmRestart(const QString& what) {
  const qint64 steps = last_ ? last_->steps_ingested : 0;
  const QString question =
      replaying_ ? QString("%1 leaves the replay and starts a live run with these settings.").arg(what)
                 : QString("%1 restarts the run: its %2 steps are discarded (Save recording keeps them).").arg(what).arg(steps);
  if (options_.confirm_restart) return options_.confirm_restart(question);
  if (!options_.dialogs) return true;
  return QMessageBox::question(this, "Restart the run?", question + "\n\nRestart now?",
                               QMessageBox::Yes | QMessageBox::No, QMessageBox::No) == QMessageBox::Yes;
}

void MainWindow::applyRunSettings() {
  StudioSettings s = settings();
  if (have_applied_) {
    const QString changes = QString::fromStdString(studio_config_changes(applied_.config, s.config));
    if (changes.isEmpty()) return;  // nothing that restarts changed
    if (last_ && last_->steps_ingested > 0 && !confirmRestart("Changing " + changes)) {
      // Keep the run: the controls show what it runs with.
      StudioConfig keep = applied_.config;
      keep.capture_layer = transport_->layer();
      controls_->setConfig(keep);
      statusBar()->showMessage("Kept the run; the controls show its settings again.", 8000);
      return;
    }
  }
  applied_ = s;
  have_applied_ = true;
  persist();
  replaying_ = false;
  fill_default_inputs(s.config, options_.argv0);
  sayIfSynthetic(applied_.config, s.config);
  onWorker([w = worker_, config = s.config, speed = livePace()] {
    w->setSpeedLimit(speed);
    w->configure(config);
  });
}

void MainWindow::sendView() {
  onWorker([w = worker_, view = view_] { w->setView(view); });
}

void MainWindow::setView(int layer, int head) {
  transport_->setView(layer, head);
  view_.layer = layer;
  view_.head = head;
  sendView();
}

void MainWindow::inspect(qint64 position, int pane) {
  view_.inspect_position = position;
  view_.inspect_pane = pane;
  sendView();
}

void MainWindow::seek(qint64 step) { onWorker([w = worker_, step] { w->seek(step); }); }
void MainWindow::stepBack() { onWorker([w = worker_] { w->stepBack(); }); }
void MainWindow::goLive() { onWorker([w = worker_] { w->goLive(); }); }
void MainWindow::queuePrompt(const QString& text) { onWorker([w = worker_, text] { w->queuePrompt(text); }); }
void MainWindow::setStatsInterval(int seconds) { onWorker([w = worker_, seconds] { w->setStatsInterval(seconds); }); }

void MainWindow::playSteps(int steps) {
  onWorker([w = worker_, steps] { w->playSteps(steps); });
}

void MainWindow::startSyntheticRun(const SyntheticStepsSpec& spec) {
  onWorker([w = worker_, spec, view = view_] {
    w->setView(view);
    w->startSynthetic(spec);
  });
}

void MainWindow::openReplay(const QString& path) {
  onWorker([w = worker_, path, view = view_] {
    w->setView(view);
    w->openReplay(path);
  });
}

void MainWindow::saveRecording(const QString& path) {
  onWorker([w = worker_, path] { w->saveRecording(path); });
}

void MainWindow::exportLogs(const QString& dir) {
  onWorker([w = worker_, dir] { w->exportLogs(dir); });
}

void MainWindow::drainSnapshots() {
  auto snapshot = slot_->take();
  if (!snapshot) return;
  QElapsedTimer timer;
  timer.start();
  draw(*snapshot);
  // One frame: the views only drew into their buffers and asked for a paint; the window paints
  // what changed together here, so no screen (nor a talk's recording) shows panes and timeline on
  // two steps, and the frame time counts the painting (a repaint() of the whole window doubled it).
  QCoreApplication::sendPostedEvents(this, QEvent::UpdateRequest);
  last_ = std::move(snapshot);
  const double ms = timer.nsecsElapsed() / 1e6;
  frame_ms_.push_back(ms);
  if (frame_ms_.size() > 100000) frame_ms_.erase(frame_ms_.begin(), frame_ms_.begin() + 50000);  // bounded
  if (options_.perf) {
    const FrameStats stats = frame_stats(std::vector<double>(frame_ms_.end() - std::min<long>(200, long(frame_ms_.size())), frame_ms_.end()));
    perf_label_->setText(QString("frame %1 ms · p50 %2 · p95 %3").arg(ms, 0, 'f', 1).arg(stats.median_ms, 0, 'f', 1).arg(stats.p95_ms, 0, 'f', 1));
    perf_label_->setToolTip(QString("Drawing time of the last snapshot on the GUI thread, and the median and 95th "
                                    "percentile of the last %1 snapshots' (--perf)").arg(stats.frames));
  }
  fitFateLegend();  // the frame time's, the model's or the recording's words may have changed width
  emit snapshotDrawn();
}

void MainWindow::draw(const StudioSnapshot& s) {
  if (!last_ || last_->layers != s.layers || last_->heads != s.heads) {
    // The model's shape; the view stays the window's own (a snapshot may predate a change).
    transport_->setShape(s.layers, s.heads);
    transport_->setView(std::min(view_.layer, s.layers - 1), std::min(view_.head, s.heads - 1));
  }
  // The panes follow the run's policies (a new choice in the controls, or a replay's).
  const auto policies = snapshot_policies(s);
  std::vector<PolicyConfig> shown;
  for (PolicyPane* pane : panes_) shown.push_back(pane->policy());
  if (policies != shown) setPanePolicies(policies);
  for (size_t i = 0; i < panes_.size() && i < s.panes.size(); ++i) panes_[i]->draw(s, s.panes[i], s.inspection.position);
  curves_->draw(s);
  drawAnalysis(s);
  transport_->setRange(s.first_step, s.latest_step, replaying_ ? replay_steps_ : s.latest_step + 1);
  transport_->setStep(s.step, s.following);
  QString where = QString("%1 · %2 · turn %3 · engine %4 s")
                      .arg(QString::fromStdString(s.mode), QString::fromStdString(s.phase))
                      .arg(s.prompt_index < 0 ? (s.steps_ingested ? QString("typed") : QString("—")) : QString::number(s.prompt_index + 1))
                      .arg(s.engine_seconds, 0, 'f', 1);
  transport_->stepLabel()->setToolTip(where);
  showThinning(s);
}

void MainWindow::showThinning(const StudioSnapshot& s) {
  thin_label_->setVisible(s.thinned_steps > 0);
  if (s.thinned_steps == 0) return;
  thin_label_->setText(QString("thinned: %1 steps").arg(s.thinned_steps));
  thin_label_->setToolTip(QString("Recording and analysis could not keep up with the engine: %1 steps (the latest %2) "
                                  "kept only the watched layer's attention; the other layers' views and the "
                                  "recording lack it there. Tokens, evictions and every number are whole.")
                              .arg(s.thinned_steps)
                              .arg(s.last_thinned_step));
}

void MainWindow::drawAnalysis(const StudioSnapshot& s) {
  // Only the analysis tab in view is drawn: the others when they are shown.
  QWidget* tab = analysis_->currentWidget();
  if (tab == heavy_) heavy_->draw(s);
  if (tab == inspector_) inspector_->draw(s.inspection);
  if (tab == head_view_) head_view_->setData(s.head_view);
  if (tab == model_view_) model_view_->setData(s.model_view, snapshot_policies(s), s.shown_layer, s.shown_head);
  if (tab == needle_) needle_->draw(s);
}

// The panes say what is loading and how far it is, where they will draw the run: the status bar's
// line alone was easy to miss while a synthetic 7B's weights took minutes.
void MainWindow::showLoadProgress() {
  const QString done = load_permille_ < 0 ? QString() : QString(" %1 %").arg(load_permille_ / 10);
  for (PolicyPane* pane : panes_) pane->showIdle("loading " + loading_what_ + " …" + done, "loading …" + done);
  load_label_->setText(loadLine());
}

QString MainWindow::loadLine() const {
  const QString seconds = QString("%1 s").arg(load_clock_.elapsed() / 1000.0, 0, 'f', 1);
  if (load_permille_ < 0) return QString("Loading %1 … %2").arg(loading_what_, seconds);
  return QString("Loading %1 … %2 % · %3").arg(loading_what_).arg(load_permille_ / 10).arg(seconds);
}

void MainWindow::hideLoading() {
  load_ticker_->stop();
  for (QWidget* w : {static_cast<QWidget*>(load_label_), static_cast<QWidget*>(load_bar_),
                     static_cast<QWidget*>(cancel_load_)})
    w->hide();
}

void MainWindow::showError(const QString& message) {
  const bool was_loading = load_ticker_->isActive();  // the load failed: the panes no longer wait for it
  hideLoading();
  if (was_loading)
    for (PolicyPane* pane : panes_) pane->showIdle("no model loaded");
  statusBar()->showMessage("Error: " + message, 20000);
  emit errorShown(message);
  if (options_.dialogs) QMessageBox::warning(this, "H2O Studio", message);
}

void MainWindow::setRunning(bool running) {
  running_ = running;
  play_->setText(running ? "Pause" : "Play");
  play_->setIcon(theme_icon(running ? IconKind::Pause : IconKind::Play));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  persist();
  event->accept();
}

}  // namespace h2o::ui
