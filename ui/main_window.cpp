#include "main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
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
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QThread>
#include <QTimer>
#include <QToolBar>
#include <qcustomplot.h>

#include "core/base/error.h"
#include "ui/frame_stats.h"
#include "ui/control_panel.h"
#include "ui/curves_panel.h"
#include "ui/heatmap_plot.h"
#include "ui/heavy_hitter_panel.h"
#include "ui/plot_context_menu.h"
#include "ui/plot_export.h"
#include "ui/plot_helpers.h"
#include "ui/policy_pane.h"
#include "ui/raster_plot.h"
#include "ui/theme.h"
#include "ui/token_inspector.h"

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

// The fate colours, once, for the toolbar.
QWidget* fate_legend() {
  auto* w = new QWidget;
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(8, 0, 8, 0);
  h->setSpacing(10);
  auto* title = new QLabel("Token fate:");
  title->setStyleSheet("color:#8fa3ae;");
  h->addWidget(title);
  for (Fate f : {Fate::Sink, Fate::Heavy, Fate::Recent, Fate::Cached, Fate::Evicted, Fate::Unborn}) {
    auto* label = new QLabel(QString("<span style='color:%1'>■</span> %2").arg(fate_color(f).name(), fate_legend_name(f)));
    label->setToolTip(fate_tooltip(f));
    h->addWidget(label);
  }
  return w;
}
}  // namespace

template <class F>
void MainWindow::onWorker(F&& f) {
  QMetaObject::invokeMethod(worker_, std::forward<F>(f), Qt::QueuedConnection);
}

MainWindow::MainWindow(MainWindowOptions options, QWidget* parent)
    : QMainWindow(parent), options_(std::move(options)), slot_(std::make_shared<SnapshotSlot>()) {
  setWindowTitle("H2O Studio");
  resize(options_.size);
  thread_ = new QThread(this);
  thread_->setObjectName("h2o-engine");
  worker_ = new EngineWorker(slot_);
  worker_->moveToThread(thread_);
  connect(thread_, &QThread::finished, worker_, &QObject::deleteLater);
  thread_->start();
  onWorker([w = worker_] { w->yieldToGui(); });  // before any backend makes its threads
  onWorker([w = worker_, limit = options_.recording_limit] { w->setRecordingLimit(limit); });

  buildLayout();
  buildActions();
  for (const auto& [name, plot] : sharedPlots()) add_export_menu(plot, name);

  connect(worker_, &EngineWorker::snapshotPending, this, &MainWindow::drainSnapshots);
  connect(worker_, &EngineWorker::failed, this, &MainWindow::showError);
  connect(worker_, &EngineWorker::warned, this, [this](const QString& m) {
    statusBar()->showMessage("Warning: " + m, 20000);
    emit warningShown(m);
  });
  connect(worker_, &EngineWorker::status, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
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
  connect(worker_, &EngineWorker::loading, this, [this](const QString& what) {
    loading_what_ = what;
    load_clock_.start();
    load_ticker_->start();
    load_label_->setText("Loading " + what + " …");
    for (QWidget* w : {static_cast<QWidget*>(load_label_), static_cast<QWidget*>(load_bar_),
                       static_cast<QWidget*>(cancel_load_)})
      w->show();
  });
  connect(worker_, &EngineWorker::loadCancelled, this, [this] {
    hideLoading();
    statusBar()->showMessage("Loading cancelled: no model loaded (Reset or a new setting loads again).", 15000);
    emit loadCancelled();
  });
  connect(worker_, &EngineWorker::loaded, this, [this](const QString& title, const QString& details) {
    hideLoading();
    model_title_ = title;
    setWindowTitle("H2O Studio — " + title);
    statusBar()->showMessage(details, 15000);
    emit modelLoaded(title);
  });
}

MainWindow::~MainWindow() {
  thread_->quit();
  thread_->wait();
}

void MainWindow::setPanePolicies(const std::vector<PolicyConfig>& policies) {
  for (PolicyPane* pane : panes_) pane->deleteLater();
  panes_.clear();
  for (const PolicyConfig& policy : policies) {
    auto* pane = new PolicyPane(policy);
    connect(pane, &PolicyPane::positionClicked, this, &MainWindow::inspect);
    panes_.push_back(pane);
    panes_splitter_->addWidget(pane);
  }
  for (const auto& [name, plot] : panePlots()) add_export_menu(plot, name);
}

void MainWindow::buildLayout() {
  panes_splitter_ = new QSplitter(Qt::Horizontal);
  setPanePolicies(configured_policies(options_.settings.config));
  curves_ = new CurvesPanel;
  heavy_ = new HeavyHitterPanel;
  inspector_ = new TokenInspector;
  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(curves_);
  bottom->addWidget(heavy_);
  bottom->addWidget(inspector_);
  bottom->setSizes({1000, 430, 430});  // proportions: the splitter scales them to its width
  connect(inspector_, &TokenInspector::followRequested, this, [this] { inspect(-1); });
  auto* central = new QSplitter(Qt::Vertical);
  central->addWidget(panes_splitter_);
  central->addWidget(bottom);
  central->setStretchFactor(0, 3);
  central->setStretchFactor(1, 1);
  central->setChildrenCollapsible(false);
  setCentralWidget(central);

  controls_ = new ControlPanel;
  controls_->setSettings(options_.settings);
  StudioConfig defaults;  // empty inputs: what the demo falls back to
  fill_default_inputs(defaults, options_.argv0);
  controls_->setDefaultInputs(defaults);
  auto* scroll = new QScrollArea;
  scroll->setWidget(controls_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  // Only ever scroll vertically: the dock is as wide as its widest field.
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  const int dock_width = controls_->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() + 4;
  scroll->setMinimumWidth(dock_width);
  auto* dock = new QDockWidget("Controls");
  dock->setObjectName("controls");
  dock->setWidget(scroll);
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                    QDockWidget::DockWidgetClosable);
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  resizeDocks({dock}, {dock_width}, Qt::Horizontal);

  apply_timer_ = new QTimer(this);
  apply_timer_->setSingleShot(true);
  apply_timer_->setInterval(400);  // settle after a burst of spin-box clicks
  connect(apply_timer_, &QTimer::timeout, this, &MainWindow::applyRunSettings);
  connect(controls_, &ControlPanel::runSettingsChanged, apply_timer_, qOverload<>(&QTimer::start));
  connect(controls_, &ControlPanel::viewChanged, this, &MainWindow::sendView);
  connect(controls_, &ControlPanel::speedChanged, this, [this](double v) {
    onWorker([w = worker_, v] { w->setSpeedLimit(v); });
    if (options_.persist) {
      QSettings settings;
      save_settings(settings, controls_->settings());
    }
  });

  step_label_ = new QLabel("no run");
  perf_label_ = new QLabel;
  load_label_ = new QLabel;
  load_bar_ = new QProgressBar;
  load_bar_->setRange(0, 0);  // the loaders report no fraction: a busy bar and the time so far
  load_ticker_ = new QTimer(this);
  load_ticker_->setInterval(200);
  connect(load_ticker_, &QTimer::timeout, this, [this] {
    load_label_->setText(QString("Loading %1 … %2 s").arg(loading_what_).arg(load_clock_.elapsed() / 1000.0, 0, 'f', 1));
  });
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
  statusBar()->addPermanentWidget(perf_label_);
  statusBar()->addPermanentWidget(step_label_);
  perf_label_->setVisible(options_.perf);
  dock->toggleViewAction()->setShortcut(QKeySequence("Ctrl+K"));
  controls_dock_ = dock;
}

void MainWindow::buildActions() {
  QStyle* st = style();
  play_ = new QAction(st->standardIcon(QStyle::SP_MediaPlay), "Play", this);
  play_->setObjectName("play");
  play_->setShortcut(Qt::Key_Space);
  play_->setToolTip("Play / pause (Space)");
  step_ = new QAction(st->standardIcon(QStyle::SP_MediaSkipForward), "Step", this);
  step_->setObjectName("step");
  step_->setShortcut(Qt::Key_S);
  step_->setToolTip("One engine step (S)");
  reset_ = new QAction(st->standardIcon(QStyle::SP_BrowserReload), "Reset", this);
  reset_->setObjectName("reset");
  reset_->setShortcut(Qt::Key_R);
  reset_->setToolTip("Start the run again with the current settings (R)");
  connect(play_, &QAction::triggered, this, [this] {
    if (running_) onWorker([w = worker_] { w->pause(); });
    else onWorker([w = worker_] { w->play(); });
  });
  connect(step_, &QAction::triggered, this, [this] { onWorker([w = worker_] { w->stepOnce(); }); });
  connect(reset_, &QAction::triggered, this, [this] { onWorker([w = worker_] { w->reset(); }); });

  auto* open = new QAction(st->standardIcon(QStyle::SP_DialogOpenButton), "Open recording…", this);
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open a recording", {}, "H2O Studio recordings (*.jsonl);;All files (*)");
    if (!path.isEmpty()) openReplay(path);
  });
  auto* save = new QAction(st->standardIcon(QStyle::SP_DialogSaveButton), "Save recording…", this);
  save->setShortcut(QKeySequence::Save);
  connect(save, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Save the run", "run.h2orec.jsonl", "H2O Studio recordings (*.jsonl)");
    if (!path.isEmpty()) saveRecording(path);
  });
  auto* plots = new QAction("Export plots (PNG, PDF, SVG)…", this);
  connect(plots, &QAction::triggered, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Folder for the plots");
    if (dir.isEmpty()) return;
    const QStringList files = exportPlots(dir, {int(PlotFormat::Png), int(PlotFormat::Pdf), int(PlotFormat::Svg)});
    statusBar()->showMessage(QString("Wrote %1 plot files to %2").arg(files.size()).arg(dir), 8000);
  });
  auto* logs = new QAction("Export logs (CSV, JSONL)…", this);
  connect(logs, &QAction::triggered, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Folder for the logs");
    if (!dir.isEmpty()) exportLogs(dir);
  });
  auto* report = new QAction(st->standardIcon(QStyle::SP_FileDialogDetailedView), "Export report", this);
  report->setShortcut(QKeySequence("Ctrl+E"));
  report->setToolTip("One click: plots, logs, recording and a summary in a new folder under ./reports (Ctrl+E)");
  connect(report, &QAction::triggered, this, [this] {
    const QString dir = QDir::current().filePath("reports/h2o-report-" +
                                                 QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss"));
    exportReport(dir);
  });
  auto* shot = new QAction("Save screenshot…", this);
  connect(shot, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Screenshot", "h2o-studio.png", "PNG (*.png)");
    if (path.isEmpty()) return;
    try {
      save_widget_png(this, path);
    } catch (const std::exception& e) {
      showError(QString::fromUtf8(e.what()));
    }
  });
  auto* quit = new QAction("Quit", this);
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* file = menuBar()->addMenu("&File");
  file->addActions({open, save});
  file->addSeparator();
  file->addActions({plots, logs, report, shot});
  file->addSeparator();
  file->addAction(quit);
  QMenu* run = menuBar()->addMenu("&Run");
  run->addActions({play_, step_, reset_});
  menuBar()->addMenu("&View")->addAction(controls_dock_->toggleViewAction());

  QToolBar* bar = addToolBar("Run");
  bar->setObjectName("run");
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addActions({play_, step_, reset_});
  bar->addSeparator();
  bar->addActions({open, save, report});
  bar->addSeparator();
  bar->addWidget(fate_legend());
}

void MainWindow::start() {
  view_.layer = controls_->layer();
  view_.head = controls_->head();
  if (!options_.replay.isEmpty()) {
    openReplay(options_.replay);
    return;
  }
  applyRunSettings();
  sendView();
}

void MainWindow::applyRunSettings() {
  StudioSettings s = controls_->settings();
  if (options_.persist) {
    QSettings settings;
    save_settings(settings, s);
  }
  fill_default_inputs(s.config, options_.argv0);
  onWorker([w = worker_, config = s.config, speed = s.speed_limit] {
    w->setSpeedLimit(speed);
    w->configure(config);
  });
}

void MainWindow::sendView() {
  view_.layer = controls_->layer();
  view_.head = controls_->head();
  if (options_.persist) {
    QSettings settings;
    save_settings(settings, controls_->settings());
  }
  onWorker([w = worker_, view = view_] { w->setView(view); });
}

void MainWindow::setView(int layer, int head) {
  view_.layer = layer;
  view_.head = head;
  onWorker([w = worker_, view = view_] { w->setView(view); });
}

void MainWindow::inspect(qint64 position) {
  view_.inspect_position = position;
  onWorker([w = worker_, view = view_] { w->setView(view); });
}

void MainWindow::playSteps(int steps) {
  onWorker([w = worker_, steps] { w->playSteps(steps); });
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

std::vector<std::pair<QString, QCustomPlot*>> MainWindow::plots() const {
  auto out = panePlots();
  const auto shared = sharedPlots();
  out.insert(out.end(), shared.begin(), shared.end());
  return out;
}

std::vector<std::pair<QString, QCustomPlot*>> MainWindow::panePlots() const {
  std::vector<std::pair<QString, QCustomPlot*>> out;
  QStringList used;
  for (PolicyPane* pane : panes_) {
    QString policy = file_stem(policy_title(pane->policy()));
    if (used.contains(policy)) policy += QString("-%1").arg(used.count());  // the same kind twice
    used << policy;
    out.push_back({policy + "-heatmap", pane->heatmap()});
    out.push_back({policy + "-survival", pane->raster()});
  }
  return out;
}

std::vector<std::pair<QString, QCustomPlot*>> MainWindow::sharedPlots() const {
  std::vector<std::pair<QString, QCustomPlot*>> out;
  out.push_back({"kv-memory", curves_->memory()});
  out.push_back({"throughput", curves_->throughput()});
  out.push_back({"perplexity", curves_->perplexity()});
  out.push_back({"agreement", curves_->agreement()});
  out.push_back({"score-rank", heavy_->scoreRank()});
  out.push_back({"sparsity", heavy_->sparsity()});
  out.push_back({"token-score-history", inspector_->plot()});
  return out;
}

QStringList MainWindow::writePlots(const QString& dir, const QList<int>& formats) {
  if (!QDir().mkpath(dir)) throw Error(dir.toStdString() + ": cannot create the folder");
  QStringList written;
  for (const auto& [name, plot] : plots())
    for (int f : formats) {
      const auto format = PlotFormat(f);
      const QString file = name + "." + plot_format_suffix(format);
      save_plot(plot, QDir(dir).filePath(file), format);
      written << file;
    }
  return written;
}

QStringList MainWindow::exportPlots(const QString& dir, const QList<int>& formats) {
  try {
    return writePlots(dir, formats);
  } catch (const std::exception& e) {
    showError("Export failed: " + QString::fromUtf8(e.what()));
    return {};
  }
}

void MainWindow::exportReport(const QString& dir) {
  if (QFileInfo::exists(dir)) {
    showError("Not writing the report: " + dir + " already exists");
    return;
  }
  // Built under a staging name and renamed by the worker once whole, so a
  // report folder either holds everything its summary lists or is not there.
  const QString staging = dir + ".partial-" + QString::number(QCoreApplication::applicationPid());
  QDir(staging).removeRecursively();
  QStringList plots;
  try {
    plots = writePlots(staging, {int(PlotFormat::Png), int(PlotFormat::Svg)});
    save_widget_png(this, QDir(staging).filePath("window.png"));
    plots.prepend("window.png");
  } catch (const std::exception& e) {
    QDir(staging).removeRecursively();
    showError("Writing the report failed: " + QString::fromUtf8(e.what()));
    return;
  }
  onWorker([w = worker_, staging, dir, plots] { w->writeReport(staging, dir, plots); });
}

void MainWindow::drainSnapshots() {
  auto snapshot = slot_->take();
  if (!snapshot) return;
  QElapsedTimer timer;
  timer.start();
  draw(*snapshot);
  last_ = std::move(snapshot);
  const double ms = timer.nsecsElapsed() / 1e6;
  frame_ms_.push_back(ms);
  if (options_.perf) {
    const FrameStats stats = frame_stats(std::vector<double>(frame_ms_.end() - std::min<long>(200, long(frame_ms_.size())), frame_ms_.end()));
    perf_label_->setText(QString("frame %1 ms · median %2 · p95 %3 (last %4)")
                             .arg(ms, 0, 'f', 1)
                             .arg(stats.median_ms, 0, 'f', 1)
                             .arg(stats.p95_ms, 0, 'f', 1)
                             .arg(stats.frames));
  }
  emit snapshotDrawn();
}

void MainWindow::draw(const StudioSnapshot& s) {
  if (!last_ || last_->layers != s.layers || last_->heads != s.heads) controls_->setShape(s.layers, s.heads);
  // The panes follow the run's policies (a new choice in the controls, or a replay's).
  const auto policies = snapshot_policies(s);
  std::vector<PolicyConfig> shown;
  for (PolicyPane* pane : panes_) shown.push_back(pane->policy());
  if (policies != shown) setPanePolicies(policies);
  const QString view = QString("layer %1 · %2")
                           .arg(s.shown_layer)
                           .arg(s.shown_head < 0 ? QString("mean over %1 heads").arg(s.heads)
                                                 : QString("head %1 (KV %2)").arg(s.shown_head).arg(s.shown_head / std::max(1, s.heads / std::max(1, s.kv_heads))));
  for (size_t i = 0; i < panes_.size() && i < s.panes.size(); ++i)
    panes_[i]->draw(s.panes[i], s.top_k, view, s.inspection.position);
  curves_->draw(s);
  heavy_->draw(s);
  inspector_->draw(s.inspection);
  step_label_->setText(QString("%1 · step %2 · %3 · turn %4 · engine %5 s")
                           .arg(QString::fromStdString(s.mode))
                           .arg(s.step)
                           .arg(QString::fromStdString(s.phase))
                           .arg(s.prompt_index + 1)
                           .arg(s.engine_seconds, 0, 'f', 1));
}

void MainWindow::hideLoading() {
  load_ticker_->stop();
  for (QWidget* w : {static_cast<QWidget*>(load_label_), static_cast<QWidget*>(load_bar_),
                     static_cast<QWidget*>(cancel_load_)})
    w->hide();
}

void MainWindow::showError(const QString& message) {
  hideLoading();
  statusBar()->showMessage("Error: " + message, 20000);
  emit errorShown(message);
  if (options_.dialogs) QMessageBox::warning(this, "H2O Studio", message);
}

void MainWindow::setRunning(bool running) {
  running_ = running;
  play_->setText(running ? "Pause" : "Play");
  play_->setIcon(style()->standardIcon(running ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (options_.persist) {
    QSettings settings;
    save_settings(settings, controls_->settings());
  }
  event->accept();
}

}  // namespace h2o::ui
