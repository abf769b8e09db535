#include "raster_plot.h"

#include "ui/theme.h"

namespace h2o::ui {

RasterPlot::RasterPlot(QWidget* parent) : QCustomPlot(parent) {
  style_plot(this);
  map_ = new QCPColorMap(xAxis, yAxis);
  map_->setInterpolate(false);
  map_->setTightBoundary(false);
  // One exact colour per Fate value: stops at i/(n-1), sampled at n levels.
  QCPColorGradient g;
  for (int f = 0; f < kFateCount; ++f) {
    QColor c = f == int(Fate::Unborn) ? background_color() : fate_color(Fate(f));
    if (f == int(Fate::Evicted)) c = QColor("#323b41");
    g.setColorStopAt(double(f) / (kFateCount - 1), c);
  }
  g.setLevelCount(kFateCount);
  map_->setGradient(g);
  map_->setDataRange(QCPRange(0, kFateCount - 1));
  yAxis->setRangeReversed(true);
  yAxis->setLabel("step");
  xAxis->setLabel("stream position");
  yAxis->ticker()->setTickCount(3);  // a short plot: a few step labels that do not collide
  xAxis->grid()->setVisible(false);
  yAxis->grid()->setVisible(false);
  setMinimumHeight(90);
  setToolTip("Survival raster: each row is a step, each column a stream position.\n"
             "Colour = fate at that step (sink, heavy hitter, recent, cached, evicted). Click: inspect the token.");
}

void RasterPlot::setData(const SurvivalRaster& r) {
  const int cols = std::max(r.positions, 1), rows = std::max(r.steps, 1);
  map_->data()->setSize(cols, rows);
  const double x0 = double(r.first_position), y0 = double(r.first_step);
  map_->data()->setRange(QCPRange(x0, x0 + cols - 1), QCPRange(y0, y0 + rows - 1));
  if (r.positions == 0 || r.steps == 0) map_->data()->fill(0);
  for (int row = 0; row < r.steps; ++row)
    for (int c = 0; c < r.positions; ++c) map_->data()->setCell(c, row, double(r.cells[size_t(row) * r.positions + c]));
  cells_ = r.positions * r.steps;
  xAxis->setRange(x0 - 0.5, x0 + cols - 0.5);
  yAxis->setRange(y0 - 0.5, y0 + rows - 0.5);
}

void RasterPlot::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton && axisRect()->rect().contains(event->position().toPoint()))
    emit positionClicked(qint64(std::lround(xAxis->pixelToCoord(event->position().x()))));
  QCustomPlot::mousePressEvent(event);
}

}  // namespace h2o::ui
