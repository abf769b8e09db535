#include "heatmap_plot.h"

#include <QToolTip>

#include "ui/theme.h"

namespace h2o::ui {

HeatmapPlot::HeatmapPlot(QWidget* parent) : QCustomPlot(parent) {
  style_plot(this);
  map_ = new QCPColorMap(xAxis, yAxis);
  map_->setInterpolate(false);
  map_->setTightBoundary(true);
  // Dark for no attention, through purple and orange to pale yellow: small
  // probabilities still show, sinks do not wash out the rest.
  QCPColorGradient g;
  g.setColorStopAt(0.0, QColor("#11161a"));
  g.setColorStopAt(0.05, QColor("#2b1d4f"));
  g.setColorStopAt(0.2, QColor("#7a2d82"));
  g.setColorStopAt(0.45, QColor("#d24f4f"));
  g.setColorStopAt(0.7, QColor("#f59c3a"));
  g.setColorStopAt(1.0, QColor("#fcf4b0"));
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(QColor("#262d32"));
  map_->setGradient(g);
  columns_ticker_.reset(new QCPAxisTickerText);
  rows_ticker_.reset(new QCPAxisTickerText);
  xAxis->setTicker(columns_ticker_);
  yAxis->setTicker(rows_ticker_);
  xAxis->setTickLabelRotation(90);
  xAxis->grid()->setVisible(false);
  yAxis->grid()->setVisible(false);
  yAxis->setRangeReversed(true);  // newest query at the bottom, like the text
  QFont small = xAxis->tickLabelFont();
  small.setPointSizeF(7);
  xAxis->setTickLabelFont(small);
  yAxis->setTickLabelFont(small);
  yAxis->setLabel("query (position)");
  yAxis->setLabelFont(small);
  setMouseTracking(true);
  setMinimumHeight(120);
}

void HeatmapPlot::setData(HeatmapData data) {
  data_ = std::move(data);
  const int rows = data_.rows(), cols = data_.cols();
  map_->data()->setSize(std::max(cols, 1), std::max(rows, 1));
  map_->data()->setRange(QCPRange(0, std::max(cols - 1, 0)), QCPRange(0, std::max(rows - 1, 0)));
  double top = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double v = data_.at(r, c);
      map_->data()->setCell(c, r, v);
      if (v > top) top = v;
    }
  if (rows == 0 || cols == 0) map_->data()->fill(std::nan(""));
  map_->setDataRange(QCPRange(0, top > 0 ? top : 1));

  // Name as many columns as fit side by side (rotated labels, one text line
  // apart), the brightest first: those are the tokens the eye goes to.
  columns_ticker_->clear();
  const double label_px = QFontMetricsF(xAxis->tickLabelFont()).height() + 3;
  const double column_px = double(std::max(60, axisRect()->width())) / std::max(cols, 1);
  const int gap = int(std::ceil(label_px / column_px));
  for (int c : spaced_by_importance(data_.column_mass, gap)) {
    QString label = QString::fromStdString(data_.labels[size_t(c)]).trimmed();
    if (label.isEmpty()) label = "␣";
    columns_ticker_->addTick(c, label.left(8));
  }
  rows_ticker_->clear();
  const int every_row = std::max(1, rows * 12 / std::max(40, axisRect()->height()));
  for (int r = rows - 1; r >= 0; r -= every_row) rows_ticker_->addTick(r, QString::number(data_.query_positions[size_t(r)]));
  xAxis->setRange(-0.5, std::max(cols, 1) - 0.5);
  yAxis->setRange(-0.5, std::max(rows, 1) - 0.5);
}

bool HeatmapPlot::cellAt(QPointF point, int& row, int& col) const {
  col = int(std::lround(xAxis->pixelToCoord(point.x())));
  row = int(std::lround(yAxis->pixelToCoord(point.y())));
  return col >= 0 && row >= 0 && col < data_.cols() && row < data_.rows() &&
         axisRect()->rect().contains(point.toPoint());
}

void HeatmapPlot::mouseMoveEvent(QMouseEvent* event) {
  int row, col;
  if (cellAt(event->position(), row, col)) {
    const double p = data_.at(row, col), score = data_.column_scores[size_t(col)];
    QToolTip::showText(event->globalPosition().toPoint(),
                       QString("<b>%1</b> · key position %2<br>query position %3<br>probability %4<br>accumulated score %5")
                           .arg(QString::fromStdString(data_.labels[size_t(col)]).toHtmlEscaped())
                           .arg(data_.columns[size_t(col)])
                           .arg(data_.query_positions[size_t(row)])
                           .arg(std::isnan(p) ? QString("— (not held by this head)") : QString::number(p, 'f', 4))
                           .arg(std::isnan(score) ? QString("—") : QString::number(score, 'f', 3)),
                       this);
  } else {
    QToolTip::hideText();
  }
  QCustomPlot::mouseMoveEvent(event);
}

void HeatmapPlot::mousePressEvent(QMouseEvent* event) {
  int row, col;
  if (event->button() == Qt::LeftButton && cellAt(event->position(), row, col)) emit positionClicked(data_.columns[size_t(col)]);
  QCustomPlot::mousePressEvent(event);
}

}  // namespace h2o::ui
