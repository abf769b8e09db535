#pragma once
// Small drawing helpers shared by the plot panels.
#include <qcustomplot.h>

#include "core/studio/snapshot.h"

namespace h2o::ui {

// A titled plot in the app's style.
QCustomPlot* make_plot(const QString& title, const QString& x_label, const QString& y_label, QWidget* parent = nullptr);
// Moves the legend out of the axis rect into one row under the title, so that
// it never covers data.
void legend_above(QCustomPlot* plot);
// One line per policy, in policy colours, named in the legend (above the
// plot, once legend_above put it there); replaces the plot's graphs.
void set_policy_graphs(QCustomPlot* plot, const std::vector<PolicyConfig>& policies);
// The policies a snapshot shows, in pane order.
std::vector<PolicyConfig> snapshot_policies(const StudioSnapshot& snapshot);
void set_series(QCPGraph* graph, const Series& series);
// Fits the axes to the data, keeping zero in view on linear axes.
void rescale(QCustomPlot* plot, bool include_zero = true);

}  // namespace h2o::ui
