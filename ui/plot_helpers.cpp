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
  plot->setMinimumSize(220, 160);
  plot->setObjectName(title);
  return plot;
}

void add_policy_graphs(QCustomPlot* plot, const std::vector<PolicyKind>& kinds) {
  for (PolicyKind kind : kinds) {
    QCPGraph* g = plot->addGraph();
    g->setPen(QPen(policy_color(kind), 1.8));
    g->setName(policy_title(kind));
    g->setAdaptiveSampling(true);
  }
  plot->legend->setVisible(true);
  plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
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
