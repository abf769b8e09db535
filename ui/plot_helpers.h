#pragma once
// Small drawing helpers shared by the plot panels.
#include <qcustomplot.h>

#include "core/studio/snapshot.h"

namespace h2o::ui {

// A titled plot in the app's style.
QCustomPlot* make_plot(const QString& title, const QString& x_label, const QString& y_label, QWidget* parent = nullptr);
// A title row at the top of any plot (make_plot's, the panes' heatmaps and rasters): returned for updating.
QCPTextElement* add_title(QCustomPlot* plot, const QString& title, double point_size = 9);
// Sets a title, elided to the plot's width: a title must never widen its
// plot (QCustomPlot's minimum size would follow the text) or be cut mid-word.
// `exported`: the longer title an exported file carries (policy, layer, head:
// a file stands alone); empty: the same.
void set_title(QCPTextElement* title, const QString& text, const QString& exported = {});
// While it lives, a plot shows its export titles whole (save_plot).
class ExportTitles {
 public:
  explicit ExportTitles(QCustomPlot* plot);
  ~ExportTitles();

 private:
  QCustomPlot* plot_;
};
// Elides the titles again after a resize.
void fit_titles(QCustomPlot* plot);
// Wraps a legend above the plot so that every entry is whole at the plot's width.
void fit_legend(QCustomPlot* plot);
// Moves the legend out of the axis rect into one row under the title, so that
// it never covers data.
void legend_above(QCustomPlot* plot);
// One line per policy, in policy colours, named in the legend (above the
// plot, once legend_above put it there); replaces the plot's graphs.
void set_policy_graphs(QCustomPlot* plot, const std::vector<PolicyConfig>& policies);
// The policies a snapshot shows, in pane order.
std::vector<PolicyConfig> snapshot_policies(const StudioSnapshot& snapshot);
void set_series(QCPGraph* graph, const Series& series);
// Fits the axes to the data, keeping zero in view on linear axes; with no
// data at all, back to 0..1 (no stale ranges after a reset or a mode change).
// A valid `y` range (the analyzer's robust one) is used instead of the data's.
void rescale(QCustomPlot* plot, bool include_zero = true, const AxisRange& y = {});
// As many ticks as fit the axis's pixels with room between labels.
void thin_ticks(QCustomPlot* plot);
// Whether any graph or colour map of the plot holds data (reports skip empty plots).
bool plot_has_data(QCustomPlot* plot);
// Layout elements shown only when a plot is exported (a raster's fate legend).
inline constexpr const char* kExportOnly = "export-only";

}  // namespace h2o::ui
