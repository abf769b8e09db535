#pragma once
// Small drawing helpers shared by the plot panels.
#include <qcustomplot.h>

#include "core/analysis/snapshot.h"

namespace h2o::ui {

// A titled plot in the app's style.
QCustomPlot* make_plot(const QString& title, const QString& x_label, const QString& y_label, QWidget* parent = nullptr);
// A title row at the top of any plot (make_plot's, the panes' heatmaps and rasters): returned for updating.
QCPTextElement* add_title(QCustomPlot* plot, const QString& title, double point_size = 9);
// What a plot is titled: `shown` where it fits the plot's width, else `compact` (a narrow pane),
// elided only where neither fits: a title must never widen its plot (QCustomPlot's minimum size
// would follow the text). `exported`: the longer title a file carries (policy, layer, head: a file
// stands alone); empty: `shown`.
struct PlotTitle {
  QString shown, compact, exported;
};
void set_title(QCPTextElement* title, const PlotTitle& text);
// While it lives, a plot shows its export titles whole (save_plot).
class ExportTitles {
 public:
  explicit ExportTitles(QCustomPlot* plot);
  ~ExportTitles();
  // The plot width at which every export title shows whole.
  int widthNeeded() const { return width_needed_; }

 private:
  QCustomPlot* plot_;
  int width_needed_ = 0;
};
// Elides the titles again after a resize.
void fit_titles(QCustomPlot* plot);
// Wraps a legend above the plot so that every entry is whole at the plot's width.
void fit_legend(QCustomPlot* plot);

// Keeps a plot's cells (its axis rect) at least `cells` px tall: the widget's least height is the
// cells plus what the layout puts around them (title, tick labels), first `chrome_guess`, then as
// measured after each layout (only growing, so that a pane's arrangement does not flip per step).
void keep_cells_at_least(QCustomPlot* plot, int cells, int chrome_guess);

// A cell plot's vertical room: `bottom` px under the cells (ticks and their labels), 2 above, the
// title one pixel over them; returns the height around the cells (the chrome).
int fix_vertical_room(QCustomPlot* plot, QCPTextElement* title, int bottom);
// What fix_vertical_room sets the margins of: the axis rects and colour scales of the plot's layout.
std::vector<QCPLayoutElement*> cell_frames(QCustomPlot* plot);
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
// `text` broken into lines at spaces so that no line is wider than `width` px (a word wider than
// that stands alone on its line): a note inside a narrow plot reads whole instead of clipped.
QString wrap_to_width(const QString& text, const QFontMetricsF& metrics, double width);
// A label's rich text as its plain words (HTML tags removed), to measure or show as a tooltip; the
// expression is compiled once, since labels fitted every frame call it.
QString plain_text(const QString& rich);
// A colour map's range along one dimension of `cells` cells, the first centred at `first`, each
// `width` wide. QCPColorMap draws from the first cell's centre to the last's and widens by half a cell
// only where there are two or more: one cell is given its whole span (else it is drawn zero wide —
// the first step's row of a raster, a heatmap of one query).
QCPRange cell_centres(int cells, double first, double width);
// As many ticks as fit the axis's pixels with room between labels.
void thin_ticks(QCustomPlot* plot);
// Whether any graph or colour map of the plot holds data (reports skip empty plots).
bool plot_has_data(QCustomPlot* plot);
// The trained-context marker's label at `coord` on `x`'s axis, near the top: "trained context N"
// whole, on the side of the line with room, or "context N" where neither side has room for it.
void place_context_label(QCPItemText* label, QCPAxis* x, double coord, int64_t context);

// A layout element shown only when the plot is exported (a raster's fate legend): kept out of the
// plot's layout, so that it takes no room in the window; save_plot puts it in the bottom row.
inline constexpr const char* kExportOnly = "export-only";
void park_export_only(QCustomPlot* plot, QCPLayoutElement* element);

}  // namespace h2o::ui
