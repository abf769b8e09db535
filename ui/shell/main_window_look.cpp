// The window's look: its actions and their icons, the theme and the text
// scale, presentation mode, and the compact layout of short windows.
#include "ui/shell/main_window.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QSplitter>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QGuiApplication>
#include <QMoveEvent>
#include <QTimer>
#include <QToolButton>
#include <ctime>
#include <map>
#include <qcustomplot.h>

#include "core/base/error.h"
#include "core/base/format.h"
#include "ui/shell/banner.h"
#include "ui/shell/pane_area.h"
#include "ui/shell/control_panel.h"
#include "ui/views/curves_panel.h"
#include "ui/views/head_view.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/heavy_hitter_panel.h"
#include "ui/views/model_view.h"
#include "ui/plot/plot_export.h"
#include "ui/plot/plot_helpers.h"
#include "ui/views/policy_pane.h"
#include "ui/views/token_flow_view.h"
#include "ui/views/raster_plot.h"
#include "ui/views/token_inspector.h"
#include "ui/shell/transport_bar.h"
#include "ui/views/needle_view.h"

namespace h2o::ui {

// The fate colours in the theme's look, refilled in place on a theme change: the legend stays the
// same widget in the status bar (QStatusBar::removeWidget in Qt 6.4 hides the widget after the one
// it removes — it hid --perf's frame time).
void MainWindow::fillFateLegend() {
  if (!legend_) {
    legend_ = new QWidget;
    auto* h = new QHBoxLayout(legend_);
    h->setContentsMargins(8, 0, 8, 0);
    h->setSpacing(8);
  }
  auto* h = static_cast<QHBoxLayout*>(legend_->layout());
  while (QLayoutItem* item = h->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  auto* title = new QLabel("Token fate:");
  title->setStyleSheet(QString("color:%1;").arg(muted_text_color().name()));
  h->addWidget(title);
  for (Fate f : {Fate::Sink, Fate::Heavy, Fate::Recent, Fate::Cached, Fate::Evicted, Fate::Unborn}) {
    auto* label = new QLabel(QString("<span style='color:%1'>■</span> %2").arg(fate_color(f).name(), fate_legend_name(f)));
    label->setToolTip(fate_tooltip(f));
    if (f == Fate::Heavy) {
      // Shorter wordings for a narrow window (the tooltip keeps the whole).
      label->setObjectName("fate_heavy");
      const QString swatch = QString("<span style='color:%1'>■</span> ").arg(fate_color(f).name());
      label->setProperty("h2o_wordings", QStringList{label->text(), swatch + "heavy hitter / attended now",
                                                     swatch + "heavy / attended"});
    }
    h->addWidget(label);
  }
  fitFateLegend();
}

// The longest wording of the heavy hitters' legend entry with which every widget of the status bar
// has its room (the frame time, the recording state): a label squeezed below its text is cut.
void MainWindow::fitFateLegend() {
  auto* heavy = legend_ ? legend_->findChild<QLabel*>("fate_heavy") : nullptr;
  if (!heavy || !statusBar()) return;
  const QStringList wordings = heavy->property("h2o_wordings").toStringList();
  int others = 0;
  for (QWidget* w : statusBar()->findChildren<QWidget*>(Qt::FindDirectChildrenOnly))
    if (w != legend_ && !w->isHidden()) others += w->sizeHint().width() + 8;
  const int room = statusBar()->width() - others - 24;  // the size grip and margins
  // Each wording's width measured, not tried: called every frame, setting texts to try them would
  // lay the status bar out again each time. The swatch's markup adds no width.
  const auto plain_width = [&](const QString& rich) {
    return heavy->fontMetrics().horizontalAdvance(plain_text(rich));
  };
  const int others_in_legend = legend_->sizeHint().width() - plain_width(heavy->text());
  QString chosen = wordings.back();
  for (const QString& wording : wordings)
    if (others_in_legend + plain_width(wording) <= room) {
      chosen = wording;
      break;
    }
  if (heavy->text() != chosen) heavy->setText(chosen);
}

QAction* MainWindow::makeAction(IconKind icon, const QString& text, const char* name, const QKeySequence& key,
                                const QString& tip) {
  auto* a = new QAction(theme_icon(icon), text, this);
  a->setObjectName(name);
  a->setProperty("h2o_icon", int(icon));
  if (!key.isEmpty()) a->setShortcut(key);
  a->setToolTip(tip);
  return a;
}

void MainWindow::buildActions() {
  buildRunActions();
  const QList<QAction*> files = buildOpenActions() + QList<QAction*>{nullptr} + buildFileActions();
  buildViewActions();
  QMenu* file = menuBar()->addMenu("&File");
  for (QAction* a : files) {
    if (a) file->addAction(a);
    else file->addSeparator();
  }
  QMenu* run = menuBar()->addMenu("&Run");
  run->addActions({play_, back_, step_, live_, reset_});
  buildNeedleMenu();
  QMenu* view = menuBar()->addMenu("&View");
  view->setObjectName("view_menu");
  view->addActions({presentation_, light_, bigger_, smaller_});
  buildHelpMenu();
}

// Play, step, back, live, reset.
void MainWindow::buildRunActions() {
  play_ = makeAction(IconKind::Play, "Play", "play", Qt::Key_Space, "Play / pause (Space)");
  step_ = makeAction(IconKind::StepForward, "Step", "step", Qt::Key_S, "One step forward (S): through the history, else a new step");
  back_ = makeAction(IconKind::StepBack, "Back", "back", Qt::Key_B, "One step back on the timeline (B)");
  live_ = makeAction(IconKind::Live, "Live", "live", Qt::Key_L, "Show the newest step again (L)");
  reset_ = makeAction(IconKind::Reset, "Reset", "reset", Qt::Key_R, "Start the run again with the current settings (R)");
  connect(play_, &QAction::triggered, this, [this] {
    if (running_) onWorker([w = worker_] { w->pause(); });
    else onWorker([w = worker_] { w->play(); });
  });
  connect(step_, &QAction::triggered, this, [this] { onWorker([w = worker_] { w->stepOnce(); }); });
  connect(back_, &QAction::triggered, this, &MainWindow::stepBack);
  connect(live_, &QAction::triggered, this, &MainWindow::goLive);
  connect(reset_, &QAction::triggered, this, [this] {
    if (last_ && last_->steps_ingested > 0 && !replaying_ && !confirmRestart("Reset"))
      return;
    onWorker([w = worker_] { w->reset(); });
  });
}

// Save a recording, exports, screenshot, quit: in the File menu's order, after the open actions
// (main_window_open.cpp; null: a separator).
QList<QAction*> MainWindow::buildFileActions() {
  save_ = makeAction(IconKind::Save, "Save recording…", "save", QKeySequence::Save, "Save the run to replay later");
  connect(save_, &QAction::triggered, this, [this] {
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
  report_ = makeAction(IconKind::Report, "Export report", "report", QKeySequence("Ctrl+E"),
                   "One click: plots, logs, recording and a summary in a new folder under ./reports (Ctrl+E)");
  connect(report_, &QAction::triggered, this, [this] {
    const std::time_t now = std::time(nullptr);
    exportReport(QDir::current().filePath("reports/h2o-report-" + QString::fromStdString(file_stamp(now))),
                 QString::fromStdString(utc_timestamp(now)));
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
  return {save_, nullptr, plots, logs, report_, shot, nullptr, quit};
}

// Presentation mode, theme and text size.
void MainWindow::buildViewActions() {
  presentation_ = makeAction(IconKind::Fullscreen, "Presentation mode", "presentation", Qt::Key_F11,
                         "Full screen, larger text and lines, controls hidden (F11)");
  presentation_->setCheckable(true);
  connect(presentation_, &QAction::toggled, this, &MainWindow::setPresentation);
  light_ = new QAction("Light theme (projectors, print)", this);
  light_->setObjectName("light");
  light_->setCheckable(true);
  light_->setChecked(options_.settings.theme == "light");
  connect(light_, &QAction::toggled, this, [this](bool on) { setLook(on ? ThemeKind::Light : ThemeKind::Dark, ui_scale()); });
  bigger_ = new QAction("Larger text and lines", this);
  bigger_->setShortcut(QKeySequence::ZoomIn);
  connect(bigger_, &QAction::triggered, this, [this] { setLook(current_theme(), std::min(3.0, ui_scale() + 0.15)); });
  smaller_ = new QAction("Smaller text and lines", this);
  smaller_->setShortcut(QKeySequence::ZoomOut);
  connect(smaller_, &QAction::triggered, this, [this] { setLook(current_theme(), std::max(0.75, ui_scale() - 0.15)); });
}

void MainWindow::showTab(const QString& name) {
  const std::map<QString, QWidget*> tabs = {{"curves", curves_},         {"inspector", inspector_},
                                            {"heavy-hitters", heavy_},    {"head-view", head_view_},
                                            {"model-view", model_view_}, {"needle", needle_}};
  const auto it = tabs.find(name.toLower());
  if (it != tabs.end() && analysis_->indexOf(it->second) >= 0) analysis_->setCurrentWidget(it->second);
  // Asked for by name, a teaching view is shown open (a short window had only its tab bar).
  if (it != tabs.end() && it->second != curves_) analysis_open_ = true;
  fitPanes();
}

void MainWindow::setAnalysisEnlarged(bool on) {
  enlarge_->blockSignals(true);
  enlarge_->setChecked(on);
  enlarge_->blockSignals(false);
  if (analysis_->indexOf(curves_) >= 0) {  // a short window: fitPanes' rules
    fitPanes();
  } else {
    const int total = central_split_->height();
    central_split_->setSizes(on ? QList<int>{total / 3, total * 2 / 3} : QList<int>{total * 3 / 4, total / 4});
  }
  // Enlarged, the teaching views also get most of the width (the curves keep a narrow column).
  if (bottom_->indexOf(curves_) >= 0) {
    const int width = bottom_->width();
    bottom_->setSizes(on ? QList<int>{width / 4, width - width / 4} : QList<int>{width * 10 / 19, width - width * 10 / 19});
  }
}

void MainWindow::setLook(ThemeKind theme, double scale) {
  apply_theme(*qApp, theme, scale);
  light_->blockSignals(true);
  light_->setChecked(theme == ThemeKind::Light);
  light_->blockSignals(false);
  restyle();
  persist();
  // The new text size changes what the panes need.
  QTimer::singleShot(0, this, &MainWindow::fitPanes);
}

void MainWindow::restyle() {
  for (QAction* a : findChildren<QAction*>())
    if (a->property("h2o_icon").isValid()) a->setIcon(theme_icon(IconKind(a->property("h2o_icon").toInt())));
  if (running_) play_->setIcon(theme_icon(IconKind::Pause));
  fillFateLegend();
  for (PolicyPane* pane : panes_) pane->restyle();
  curves_->restyle();
  heavy_->restyle();
  inspector_->restyle();
  needle_->restyle();
  banner_->restyle();
  // Redraw everything in the new look.
  if (last_) {
    auto again = last_;
    last_.reset();
    draw(*again);
    last_ = again;
  }
  sendView();
}

void MainWindow::setPresentation(bool on) {
  if (on == presentation_on_) return;
  presentation_on_ = on;
  presentation_->blockSignals(true);
  presentation_->setChecked(on);
  presentation_->blockSignals(false);
  if (on) {
    scale_before_presentation_ = ui_scale();
    controls_dock_->hide();
    showFullScreen();
    setLook(current_theme(), std::max(1.3, ui_scale()));
  } else {
    controls_dock_->show();
    showNormal();
    setLook(current_theme(), scale_before_presentation_);
  }
  presentation_pace_ = on && speed_choice_ <= 0 ? kPresentationPace : 0;
  applyLivePace();
  applyTextScale();
}

void MainWindow::applyTextScale() {
  for (PolicyPane* pane : panes_) {
    pane->text()->setTextScale(presentation_on_ ? presentation_text_scale_ : text_scale_);
    pane->setTextEmphasis(presentation_on_);
  }
  // Larger text needs more of the height: the grid or the tabs again.
  QTimer::singleShot(0, this, &MainWindow::fitPanes);
}

double MainWindow::livePace() const { return speed_choice_ > 0 ? speed_choice_ : presentation_pace_; }

void MainWindow::applyLivePace() {
  if (replaying_) return;  // a replay keeps its own pace (times the recorded one)
  transport_->setSpeed(livePace());
  onWorker([w = worker_, v = livePace()] { w->setSpeedLimit(v); });
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  fitFateLegend();
  // Short windows (1280x720, a projector) give the panes the height: the
  // curves become the first analysis tab instead of a column of their own.
  const bool compact = height() < int(900 * std::max(1.0, ui_scale()));
  const bool is_compact = analysis_->indexOf(curves_) >= 0;
  if (compact != is_compact) {
    if (compact) {
      analysis_->insertTab(0, curves_, "Curves");
      analysis_->setCurrentIndex(0);
    } else {
      analysis_->removeTab(analysis_->indexOf(curves_));
      bottom_->insertWidget(0, curves_);
      curves_->show();
      bottom_->setSizes({1000, 900});
    }
    // Compact, the tabs may shrink to their tab bar (a click on a tab opens them again).
    analysis_->setMinimumHeight(compact ? analysisStrip() : 0);
  }
  fitPanes();
  // Again once the layouts have given the pane area its width.
  QTimer::singleShot(0, this, &MainWindow::fitPanes);
}

// Under a window manager the title bar and frame come on top of the size asked for (--window-size
// 1920x1080 on a 1080p screen put the status bar off screen). The frame is known once the manager
// has placed the window: then, once, the window is fitted into the screen's free area. Without a
// frame (Xvfb with no manager) nothing is changed, nor offscreen (its made-up 800x800 screen and
// frame would shrink every test's window): a test's or a screenshot's size is kept.
void MainWindow::moveEvent(QMoveEvent* event) {
  QMainWindow::moveEvent(event);
  if (fitted_to_screen_ || isFullScreen() || isMaximized() || !screen()) return;
  if (QGuiApplication::platformName() == "offscreen" || QGuiApplication::platformName() == "minimal") return;
  const QSize frame = frameGeometry().size() - size();
  if (frame.height() <= 0) return;
  fitted_to_screen_ = true;
  const QRect free = screen()->availableGeometry();
  if (free.contains(frameGeometry())) return;
  resize(size().boundedTo(free.size() - frame));
  move(free.topLeft());
}

int MainWindow::analysisStrip() const { return analysis_->tabBar()->sizeHint().height() + 4; }

void MainWindow::fitPanes() {
  if (analysis_->indexOf(curves_) < 0) return;  // tall windows keep the splitter where it is
  const int total = central_split_->height() - central_split_->handleWidth();
  if (total <= 0) return;
  const auto split = [&](int panes) { central_split_->setSizes({panes, total - panes}); };
  if (enlarge_->isChecked()) {
    // Most of the height to the analysis, but never below one pane whole as a tab (the panes were
    // crushed to 70-95 px heatmaps at 1280x720).
    split(std::min(std::max(total / 3, pane_area_->tabHeightNeeded()), total - analysisStrip()));
    return;
  }
  if (analysis_open_) {
    split(total * 3 / 5);
    return;
  }
  // Panes in tabs (too narrow to stand side by side) need one tab's height.
  const int need = pane_area_->heightNeeded() > 0 ? pane_area_->heightNeeded() : pane_area_->tabHeightNeeded();
  if (need <= 0) return;
  // Every pane in view (the grid at 1280x720) first; the analysis tabs get the rest, or only
  // their tab bar where the rest would show a sliver of a plot.
  // Presenting, the panes' answers are what the room reads: the panes get three quarters at least.
  // Under kLeastAnalysis the curves' titles, legends and axes would lie over each other.
  constexpr int kLeastAnalysis = 160;
  const int room = std::max(total * 3 / 5, total - analysisStrip());
  const int least = presentation_on_ ? total * 3 / 4 : total * 3 / 5;
  split(total - need < kLeastAnalysis ? room : std::clamp(need, std::min(least, room), room));
}

// A click on an analysis tab: opens the tabs where they were only their bar; in a short window, a
// click on the tab already open closes them again, giving the panes back their height (their grid).
void MainWindow::openAnalysis(int index) {
  const bool compact = analysis_->indexOf(curves_) >= 0;
  const bool open = analysis_->height() >= 3 * analysisStrip();
  if (!compact) {
    if (!open) central_split_->setSizes({central_split_->height() * 3 / 5, central_split_->height() * 2 / 5});
    return;
  }
  const bool close = open && index == analysis_->currentIndex();
  analysis_open_ = !close;
  if (close && enlarge_->isChecked()) setAnalysisEnlarged(false);
  else fitPanes();
}

}  // namespace h2o::ui
