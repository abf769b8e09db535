// What the window exports: every plot by the name it is saved under, the
// plots a report holds (those of the run's mode that have data), plot files
// and the report folder (which appears only when complete).
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
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>
#include <ctime>
#include <map>
#include <qcustomplot.h>

#include "core/base/error.h"
#include "core/base/format.h"
#include "ui/shell/banner.h"
#include "ui/views/head_view.h"
#include "ui/views/model_view.h"
#include "ui/shell/control_panel.h"
#include "ui/views/curves_panel.h"
#include "ui/views/head_view.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/heavy_hitter_panel.h"
#include "ui/views/model_view.h"
#include "ui/plot/plot_export.h"
#include "ui/plot/plot_helpers.h"
#include "ui/views/policy_pane.h"
#include "ui/views/raster_plot.h"
#include "ui/views/token_inspector.h"
#include "ui/shell/transport_bar.h"
#include "ui/views/needle_view.h"

namespace h2o::ui {

std::vector<std::pair<QString, QCustomPlot*>> MainWindow::plots() const {
  auto out = panePlots();
  const auto shared = sharedPlots();
  out.insert(out.end(), shared.begin(), shared.end());
  return out;
}

std::vector<std::pair<QString, QCustomPlot*>> MainWindow::reportPlots() const {
  const std::string mode = last_ ? last_->mode : "stream";
  const auto of_mode = curves_->plotsForMode(mode);
  std::vector<std::pair<QString, QCustomPlot*>> out;
  for (const auto& [name, plot] : plots()) {
    const bool curve = plot == curves_->memory() || plot == curves_->throughput() || plot == curves_->perplexity() ||
                       plot == curves_->agreement();
    if (curve && std::find(of_mode.begin(), of_mode.end(), plot) == of_mode.end()) continue;
    if (plot_has_data(plot)) out.push_back({name, plot});
  }
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
    out.push_back({policy + "-survival-whole", pane->overview()});
    out.push_back({policy + "-survival-detail", pane->raster()});
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
  out.push_back({"needle-survival", needle_->survival()});
  out.push_back({"needle-recall", needle_->recall()});
  return out;
}

QStringList MainWindow::writePlots(const QString& dir, const QList<int>& formats,
                                   const std::vector<std::pair<QString, QCustomPlot*>>& plots) {
  if (!QDir().mkpath(dir)) throw Error(dir.toStdString() + ": cannot create the folder");
  QStringList written;
  for (const auto& [name, plot] : plots)
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
    fillHiddenPlots();
    return writePlots(dir, formats, reportPlots());
  } catch (const std::exception& e) {
    showError("Export failed: " + QString::fromUtf8(e.what()));
    return {};
  }
}

void MainWindow::exportReport(const QString& dir, const QString& written) {
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
    fillHiddenPlots();
    plots = writePlots(staging, {int(PlotFormat::Png), int(PlotFormat::Pdf), int(PlotFormat::Svg)}, reportPlots());
    save_widget_png(this, QDir(staging).filePath("window.png"));
    plots.prepend("window.png");
    plots << writeViewPictures(staging);
  } catch (const std::exception& e) {
    QDir(staging).removeRecursively();
    showError("Writing the report failed: " + QString::fromUtf8(e.what()));
    return;
  }
  const QString when = written.isEmpty() ? QString::fromStdString(utc_timestamp(std::time(nullptr))) : written;
  onWorker([w = worker_, staging, dir, plots, when] { w->writeReport(staging, dir, plots, when); });
}

void MainWindow::fillHiddenPlots() {
  // The analysis tabs not in view are drawn only for exports.
  if (!last_) return;
  heavy_->draw(*last_);
  inspector_->draw(last_->inspection);
}

// The teaching views are widgets, not plots: the report holds a picture of each at the shown step.
// One in view is taken as it is; one in a tab never shown has no size of its own yet, so it is laid
// out at the analysis area's size, and at least 1200x600 (a file is read, not glanced at), the
// model view tall enough for its every layer.
QStringList MainWindow::writeViewPictures(const QString& dir) {
  QStringList written;
  if (!last_) return written;
  head_view_->setData(last_->head_view);
  model_view_->setData(last_->model_view, snapshot_policies(*last_), last_->shown_layer, last_->shown_head);
  const QSize least = analysis_->currentWidget()->size().expandedTo(QSize(1200, 600));
  const std::pair<QString, QWidget*> views[] = {{"head-view.png", last_->head_view.panes.empty() ? nullptr : head_view_},
                                                {"model-view.png", last_->model_view.cells.empty() ? nullptr : model_view_}};
  for (const auto& [file, view] : views) {
    if (!view) continue;
    // The model view's whole grid, though the tab scrolls it (32 layers need about 480 px).
    const QSize whole = view == model_view_ ? least.expandedTo({0, model_view_->thumbnails()->minimumHeight() + 40}) : least;
    if (!view->isVisible()) view->resize(view->size().expandedTo(whole));
    save_widget_png(view, QDir(dir).filePath(file));
    written << file;
  }
  return written;
}

}  // namespace h2o::ui
