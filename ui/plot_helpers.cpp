#include "plot_helpers.h"

#include "ui/theme.h"

namespace h2o::ui {

QCustomPlot* make_plot(const QString& title, const QString& x_label, const QString& y_label, QWidget* parent) {
  auto* plot = new QCustomPlot(parent);
  style_plot(plot);
  plot->plotLayout()->insertRow(0);
  auto* caption = new QCPTextElement(plot, title, QFont(plot->font().family(), 9, QFont::Bold));
  caption->setTextColor(text_color());
  plot->plotLayout()->addElement(0, 0, caption);
  plot->xAxis->setLabel(x_label);
  plot->yAxis->setLabel(y_label);
  plot->setMinimumSize(180, 130);  // explicit: a long legend must not widen the window
  plot->setObjectName(title);
  return plot;
}

void set_policy_graphs(QCustomPlot* plot, const std::vector<PolicyConfig>& policies) {
  plot->clearGraphs();
  for (const PolicyConfig& policy : policies) {
    QCPGraph* g = plot->addGraph();
    g->setPen(QPen(policy_color(policy), 1.8));
    g->setName(policy_title(policy));
    g->setAdaptiveSampling(true);
  }
}

std::vector<PolicyConfig> snapshot_policies(const StudioSnapshot& snapshot) {
  std::vector<PolicyConfig> out;
  for (const PaneSnapshot& pane : snapshot.panes) out.push_back(pane.config);
  return out;
}

void legend_above(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  if (plot->axisRect()->insetLayout()->take(legend)) plot->axisRect()->insetLayout()->simplify();
  // make_plot put the title in row 0: the legend goes right under it.
  plot->plotLayout()->insertRow(1);
  plot->plotLayout()->addElement(1, 0, legend);
  plot->plotLayout()->setRowStretchFactor(1, 0.001);
  legend->setFillOrder(QCPLegend::foColumnsFirst);
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  legend->setMargins(QMargins(4, 0, 4, 0));
  legend->setRowSpacing(0);
  legend->setColumnSpacing(10);
  legend->setIconSize(16, 8);
  legend->setVisible(true);
}

void set_series(QCPGraph* graph, const Series& series) {
  graph->setData(QVector<double>(series.x.begin(), series.x.end()), QVector<double>(series.y.begin(), series.y.end()),
                 true);
}

void rescale(QCustomPlot* plot, bool include_zero) {
  plot->rescaleAxes(true);
  for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
    QCPRange r = axis->range();
    if (axis->scaleType() == QCPAxis::stLinear) {
      if (include_zero && r.lower > 0) r.lower = 0;
      if (r.size() <= 0) r.upper = r.lower + 1;
      if (axis == plot->yAxis) r.upper += r.size() * 0.05;
    }
    axis->setRange(r);
  }
}

}  // namespace h2o::ui
