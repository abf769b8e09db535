#include "ui/views/raster_plot.h"

#include "ui/plot/plot_helpers.h"
#include "ui/plot/theme.h"

namespace h2o::ui {

namespace {
constexpr int kMinDetail = 24, kMaxDetail = 4096;
}

RasterPlot::RasterPlot(Role role, QWidget* parent) : QCustomPlot(parent), role_(role) {
  style_plot(this);
  title_ = add_title(this, "", 8);
  // Cells and straight axes: antialiasing buys nothing here and costs a third of the drawing.
  setNotAntialiasedElements(QCP::aeAll);
  setAntialiasedElements(QCP::aeNone);
  map_ = new QCPColorMap(xAxis, yAxis);
  map_->setInterpolate(false);
  map_->setTightBoundary(false);
  map_->setDataRange(QCPRange(0, kFateCount - 1));
  yAxis->setRangeReversed(true);
  yAxis->setLabel("step");
  setProperty("h2o_export_x_label", "stream position");
  // The overview's title says what its axes are (and how long the stream is): its height goes to the cells.
  if (role == Role::Overview) xAxis->setTickLabels(false);
  xAxis->grid()->setVisible(false);
  yAxis->grid()->setVisible(false);
  ticker_.reset(new QCPAxisTickerText);
  xAxis->setTicker(ticker_);
  // Steps are whole numbers: no "-0.5" or "0.5" tick on a short or empty raster.
  QSharedPointer<QCPAxisTickerFixed> steps(new QCPAxisTickerFixed);
  steps->setTickStep(1);
  steps->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  yAxis->setTicker(steps);
  mark_first_ = new QCPItemStraightLine(this);
  mark_end_ = new QCPItemStraightLine(this);
  for (QCPItemStraightLine* m : {mark_first_, mark_end_}) {
    m->setVisible(false);
    m->setSelectable(false);
  }
  mark_label_ = new QCPItemText(this);
  mark_label_->setVisible(false);
  mark_label_->setSelectable(false);
  mark_label_->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
  mark_label_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  mark_label_->setText(" detail below");
  context_line_ = new QCPItemStraightLine(this);
  context_line_->setVisible(false);
  needle_band_ = new QCPItemRect(this);
  needle_band_->setVisible(false);
  needle_band_->setSelectable(false);
  needle_band_->setPen(QPen(QColor(255, 190, 0, 230), 1));
  needle_band_->setBrush(QColor(255, 190, 0, 90));
  needle_band_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
  needle_band_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
  context_label_ = new QCPItemText(this);
  context_label_->setVisible(false);
  context_label_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  context_label_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  buildLegend();
  restyle();
  setData({}, {"no run", "no run", "survival · no run"}, -1, -1, 0);  // the empty state until a run's first snapshot
  // Explicit, so that the title does not set the pane's width.
  setMinimumWidth(160);
  setToolTip(role == Role::Overview
                 ? "The whole stream: each column is a stretch of positions, each row a stretch of steps;\n"
                   "a cell shows the most telling fate in it (sink, heavy hitter, recent, cached, evicted).\n"
                   "Click: show that stretch in the detail below."
                 : "Detail: each column a stream position, each row a step (binned when long).\n"
                   "Wheel: zoom · drag: scroll · double-click: follow the end · click: inspect the token.");
}

void RasterPlot::buildLegend() {
  // The fate colours, shown under the raster in exported files (the toolbar shows them in the app).
  legend_row_ = new QCPLayoutGrid;
  legend_row_->setObjectName(kExportOnly);
  plotLayout()->addElement(plotLayout()->rowCount(), 0, legend_row_);
  plotLayout()->setRowStretchFactor(plotLayout()->rowCount() - 1, 0.001);
  int col = 0;
  for (Fate f : {Fate::Sink, Fate::Heavy, Fate::Recent, Fate::Cached, Fate::Evicted}) {
    auto* t = new QCPTextElement(this, QString("■ %1").arg(fate_legend_name(f)));
    t->setProperty("fate", int(f));
    legend_row_->addElement(0, col++, t);
  }
  park_export_only(this, legend_row_);
}

void RasterPlot::restyle() {
  style_plot(this);
  QCPColorGradient g;
  for (int f = 0; f < kFateCount; ++f) g.setColorStopAt(double(f) / (kFateCount - 1), raster_color(Fate(f)));
  g.setLevelCount(kFateCount);
  map_->setGradient(g);
  // Nothing drawn over the cells: ticks point outwards, no base lines along the edge rows.
  for (QCPAxis* a : {xAxis, yAxis}) {
    a->setBasePen(Qt::NoPen);
    a->setTickLength(0, 3);
    a->setSubTicks(false);
  }
  for (QCPItemStraightLine* m : {mark_first_, mark_end_}) m->setPen(QPen(text_color(), 1.2 * std::max(1.0, ui_scale()), Qt::DashLine));
  context_line_->setPen(QPen(marker_color(), 1.4 * std::max(1.0, ui_scale()), Qt::DashLine));
  context_label_->setColor(marker_color());
  QFont f = font();
  f.setPointSizeF(scaled_pt(7.5));
  context_label_->setFont(f);
  mark_label_->setColor(text_color());
  mark_label_->setFont(f);
  // On the background's colour, so that it reads over any fate's cells.
  QColor under = background_color();
  under.setAlpha(215);
  mark_label_->setBrush(under);
  mark_label_->setPadding(QMargins(2, 0, 2, 0));
  for (int i = 0; legend_row_ && i < legend_row_->elementCount(); ++i)
    if (auto* t = qobject_cast<QCPTextElement*>(legend_row_->elementAt(i))) {
      t->setTextColor(legible_on(fate_color(Fate(t->property("fate").toInt())), background_color()));
      t->setFont(f);
    }
  // Under the cells: ticks, and in the detail their position labels.
  xAxis->setTickLabelPadding(2);
  const int labels = role_ == Role::Detail ? 2 + QFontMetrics(xAxis->tickLabelFont()).height() + 1 : 1;
  keep_cells_at_least(this, kMinCells, fix_vertical_room(this, title_, 3 + labels));
}

QString RasterPlot::title() const { return title_->property("h2o_full").toString(); }
QString RasterPlot::exportTitle() const { return title_->property("h2o_export").toString(); }

// The x axis counts columns (a binned raster's first column holds only the
// sinks, so positions are not linear in columns); ticks name positions.
double RasterPlot::columnCoord(int64_t position) const {
  const SurvivalRaster& r = raster_;
  if (r.cols == 0) return 0;
  const int c = r.column_of(position);
  const int64_t from = r.column_first(c), to = std::max(from + 1, r.column_first(c + 1));
  return c - 0.5 + double(position - from) / double(to - from);
}

int64_t RasterPlot::positionAt(double x) const {
  const SurvivalRaster& r = raster_;
  if (r.cols == 0) return r.first_position;
  const double coord = std::clamp(x + 0.5, 0.0, double(r.cols) - 1e-9);
  const int c = int(coord);
  const int64_t from = r.column_first(c), to = std::max(from + 1, r.column_first(c + 1));
  return std::min(to - 1, from + int64_t((coord - c) * double(to - from)));
}

void RasterPlot::setData(const SurvivalRaster& r, const PlotTitle& title, int64_t marked_first,
                         int64_t marked_end, int64_t context) {
  raster_ = r;
  set_title(title_, title);
  const int cols = std::max(r.cols, 1), rows = std::max(r.rows, 1);
  map_->data()->setSize(cols, rows);
  const double per_row = r.rows ? double(r.steps()) / r.rows : 1.0;
  const double y0 = double(r.first_step) - 0.5;
  map_->data()->setRange(cell_centres(cols, 0, 1), cell_centres(rows, y0 + per_row / 2, per_row));
  if (r.cells.empty()) map_->data()->fill(0);
  for (int row = 0; row < r.rows; ++row)
    for (int c = 0; c < r.cols; ++c) map_->data()->setCell(c, row, double(r.cells[size_t(row) * size_t(r.cols) + size_t(c)]));
  map_->setProperty("h2o_has_data", !r.cells.empty());
  xAxis->setRange(-0.5, cols - 0.5);
  yAxis->setRange(y0, y0 + per_row * rows);
  const bool mark = marked_first >= 0 && marked_end > marked_first;
  for (auto [m, x] : {std::pair{mark_first_, marked_first}, {mark_end_, marked_end}}) {
    m->setVisible(mark && x > r.first_position && x < r.end_position);
    m->point1->setCoords(columnCoord(x), y0);
    m->point2->setCoords(columnCoord(x), y0 + 1);
  }
  // The label beside the first edge in view, at the bottom (the context marker's label is at the top),
  // on the side with room: the stretch usually ends at the stream's end, so its first edge is far right.
  QCPItemStraightLine* labelled = mark_first_->visible() ? mark_first_ : mark_end_;
  const double at = labelled->point1->coords().x();
  const bool room_right = labelled == mark_first_ && at < (cols - 1) / 2.0;
  mark_label_->setVisible(labelled->visible());
  mark_label_->setPositionAlignment((room_right ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignBottom);
  const auto pointing = [&](const QString& words) {
    return labelled == mark_first_ ? (room_right ? " " + words + " ▸" : words + " ▸ ") : "◂ " + words + " ";
  };
  mark_label_->setText(pointing("detail below"));
  // A file has no "below": it says which positions the dashed edges mark (ExportDecorations swaps it in).
  mark_label_->setProperty("h2o_export_text", pointing(QString("detail: positions %1–%2").arg(marked_first).arg(marked_end - 1)));
  mark_label_->position->setCoords(at, 0.98);
  const bool marker = context > 0 && context >= r.first_position && context < r.end_position;
  context_line_->setVisible(marker);
  context_label_->setVisible(marker);
  if (marker) {
    context_line_->point1->setCoords(columnCoord(context), 0);
    context_line_->point2->setCoords(columnCoord(context), 1);
    place_context_label(context_label_, xAxis, columnCoord(context), context);
  }
  // Position labels that fit, at round positions; steps at least two text lines apart.
  const QFontMetricsF fm(xAxis->tickLabelFont());
  ticker_->clear();
  if (r.cols > 0 && r.positions() > 0) {
    const int fit = std::clamp(int(axisRect()->width() / (fm.horizontalAdvance("000000") + 14)), 2, 8);
    const double raw = double(r.positions()) / fit;
    const double magnitude = std::pow(10.0, std::floor(std::log10(std::max(1.0, raw))));
    double step = magnitude;
    for (double m : {1.0, 2.0, 5.0, 10.0})
      if (m * magnitude >= raw) {
        step = m * magnitude;
        break;
      }
    for (double p = std::ceil(double(r.first_position) / step) * step; p < double(r.end_position); p += step)
      ticker_->addTick(columnCoord(int64_t(p)), QString::number(int64_t(p)));
  }
  yAxis->ticker()->setTickCount(std::clamp(int(axisRect()->height() / (fm.height() * 2.2)), 1, 4));
  // Before the first step there is no step to number.
  yAxis->setTickLabels(r.rows > 0);
}

void RasterPlot::setNeedle(int64_t begin, int64_t end) {
  const bool shown = begin >= 0 && end > begin && end > raster_.first_position && begin < raster_.end_position;
  needle_band_->setVisible(shown);
  if (!shown) return;
  double left = columnCoord(std::max(begin, raster_.first_position)) - 0.5;
  double right = columnCoord(std::min(end, raster_.end_position) - 1) + 0.5;
  const double per_pixel = xAxis->range().size() / std::max(1, axisRect()->width());
  if (right - left < 3 * per_pixel) {
    const double middle = (left + right) / 2;
    left = middle - 1.5 * per_pixel, right = middle + 1.5 * per_pixel;
  }
  needle_band_->topLeft->setCoords(left, 0);
  needle_band_->bottomRight->setCoords(right, 1);
}

QPoint RasterPlot::cellPixel(int row, int col) const {
  const double per_row = raster_.rows ? double(raster_.steps()) / raster_.rows : 1.0;
  const double y = double(raster_.first_step) - 0.5 + per_row * (row + 0.5);
  return QPoint(int(std::lround(xAxis->coordToPixel(col))), int(std::lround(yAxis->coordToPixel(y))));
}

void RasterPlot::resizeEvent(QResizeEvent* event) {
  QCustomPlot::resizeEvent(event);
  fit_titles(this);
  replot(QCustomPlot::rpImmediateRefresh);  // lays the axis rect out for this size
  emit pixelsChanged(axisRect()->width(), axisRect()->height());
}

void RasterPlot::mousePressEvent(QMouseEvent* event) {
  press_ = event->position();
  press_first_ = double(raster_.first_position);
  dragging_ = false;
  QCustomPlot::mousePressEvent(event);
}

void RasterPlot::mouseMoveEvent(QMouseEvent* event) {
  if (role_ == Role::Detail && (event->buttons() & Qt::LeftButton) && raster_.cols > 0) {
    const double dx = event->position().x() - press_.x();
    if (std::abs(dx) > 4) dragging_ = true;
    if (dragging_) {
      const double per_px = double(raster_.positions()) / std::max(1, axisRect()->width());
      emit detailRequested(qint64(std::max(0.0, press_first_ - dx * per_px)), int(raster_.positions()));
    }
  }
  QCustomPlot::mouseMoveEvent(event);
}

void RasterPlot::mouseReleaseEvent(QMouseEvent* event) {
  const bool inside = axisRect()->rect().contains(event->position().toPoint());
  if (event->button() == Qt::LeftButton && inside && !dragging_) {
    const qint64 position = positionAt(xAxis->pixelToCoord(event->position().x()));
    if (role_ == Role::Overview) emit detailRequested(position, -1);
    else emit positionClicked(position);
  }
  dragging_ = false;
  QCustomPlot::mouseReleaseEvent(event);
}

void RasterPlot::mouseDoubleClickEvent(QMouseEvent* event) {
  if (role_ == Role::Detail) emit detailRequested(-1, int(std::max<int64_t>(kMinDetail, raster_.positions())));
  QCustomPlot::mouseDoubleClickEvent(event);
}

void RasterPlot::wheelEvent(QWheelEvent* event) {
  if (role_ != Role::Detail || raster_.cols == 0) return QCustomPlot::wheelEvent(event);
  // Zoom around the position under the pointer.
  const double at = double(positionAt(xAxis->pixelToCoord(event->position().x())));
  const int count = int(raster_.positions());
  const int zoomed = std::clamp(int(event->angleDelta().y() > 0 ? count / 1.5 : count * 1.5), kMinDetail, kMaxDetail);
  const double ratio = (at - double(raster_.first_position)) / std::max(1, count);
  emit detailRequested(qint64(std::max(0.0, at - ratio * zoomed)), zoomed);
  event->accept();
}

}  // namespace h2o::ui
