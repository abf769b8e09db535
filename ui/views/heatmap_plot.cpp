#include "ui/views/heatmap_plot.h"

#include <algorithm>

#include <QToolTip>

#include "ui/plot/plot_helpers.h"
#include "ui/plot/theme.h"

namespace h2o::ui {

HeatmapPlot::HeatmapPlot(QWidget* parent) : QCustomPlot(parent) {
  style_plot(this);
  title_ = add_title(this, "Attention", 8);
  // Cells and straight axes: antialiasing buys nothing here and costs a third of the drawing.
  setNotAntialiasedElements(QCP::aeAll);
  setAntialiasedElements(QCP::aeNone);
  map_ = new QCPColorMap(xAxis, yAxis);
  map_->setInterpolate(false);
  map_->setTightBoundary(false);  // the first and last rows and columns drawn whole, not halved
  scale_ = new QCPColorScale(this);
  scale_->setType(QCPAxis::atRight);
  scale_->setBarWidth(8);
  scale_->axis()->setLabel("probability");
  scale_->axis()->ticker()->setTickCount(3);
  plotLayout()->addElement(1, 1, scale_);
  setProperty("h2o_title_inset", 70);  // the colour scale's column
  map_->setColorScale(scale_);
  auto* margins = new QCPMarginGroup(this);
  axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  columns_ticker_.reset(new QCPAxisTickerText);
  rows_ticker_.reset(new QCPAxisTickerText);
  xAxis->setTicker(columns_ticker_);
  yAxis->setTicker(rows_ticker_);
  xAxis->setTickLabelRotation(90);
  xAxis->grid()->setVisible(false);
  yAxis->grid()->setVisible(false);
  yAxis->setRangeReversed(true);  // newest query at the bottom, like the text
  yAxis->setLabel("query position");
  // The window names each column by its word under the cells; a file says what the columns are too.
  setProperty("h2o_export_x_label", "cached key (its word), in stream order");
  needle_ = new QCPItemRect(this);
  needle_->setVisible(false);
  needle_->setSelectable(false);
  needle_->setPen(QPen(QColor(255, 190, 0), 2));
  needle_->setBrush(Qt::NoBrush);
  needle_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
  needle_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
  note_ = new QCPItemText(this);
  note_->position->setType(QCPItemPosition::ptAxisRectRatio);
  note_->position->setCoords(0.5, 0.5);
  note_->setVisible(false);
  restyle();
  setData({}, {"attention · no run", "no run", "attention · no run"});  // the empty state until a run's first snapshot
  setMouseTracking(true);
  // Explicit, so that neither the title nor the labels set the pane's width.
  setMinimumWidth(160);
}

int HeatmapPlot::labelExtent() const {
  // Column labels are elided to this (they stand rotated): the cells' room below stays fixed.
  return int(std::ceil(QFontMetricsF(xAxis->tickLabelFont()).horizontalAdvance("nnnnnn")));
}

void HeatmapPlot::restyle() {
  style_plot(this);
  map_->setGradient(attention_gradient());
  QFont small = xAxis->tickLabelFont();
  small.setPointSizeF(scaled_pt(7));
  xAxis->setTickLabelFont(small);
  yAxis->setTickLabelFont(small);
  yAxis->setLabelFont(small);
  for (QCPAxis* a : {scale_->axis()}) {
    a->setBasePen(QPen(axis_color()));
    a->setTickPen(QPen(axis_color()));
    a->setSubTickPen(Qt::NoPen);
    a->setTickLabelColor(text_color());
    a->setLabelColor(text_color());
    a->setTickLabelFont(small);
    a->setLabelFont(small);
  }
  // Ticks point outwards: none over the first or last row and column.
  for (QCPAxis* a : {xAxis, yAxis}) {
    a->setBasePen(Qt::NoPen);
    a->setTickLength(0, 3);
    a->setSubTicks(false);
  }
  note_->setColor(muted_text_color());
  note_->setFont(small);
  xAxis->setTickLabelPadding(2);
  keep_cells_at_least(this, kMinCells, fix_vertical_room(this, title_, 3 + 2 + labelExtent() + 2));
}

QString HeatmapPlot::title() const { return title_->property("h2o_full").toString(); }
QString HeatmapPlot::exportTitle() const { return title_->property("h2o_export").toString(); }

void HeatmapPlot::setData(HeatmapData data, const PlotTitle& title) {
  data_ = std::move(data);
  set_title(title_, title);
  const int rows = data_.rows(), cols = data_.cols();
  map_->data()->setSize(std::max(cols, 1), std::max(rows, 1));
  map_->data()->setRange(cell_centres(std::max(cols, 1), 0, 1), cell_centres(std::max(rows, 1), 0, 1));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) map_->data()->setCell(c, r, data_.at(r, c));
  if (rows == 0 || cols == 0) map_->data()->fill(std::nan(""));
  map_->setProperty("h2o_has_data", rows > 0 && cols > 0);
  map_->setDataRange(QCPRange(0, data_.top > 0 ? data_.top : 1));
  note_->setVisible(rows == 0 || cols == 0);
  xAxis->setRange(-0.5, std::max(cols, 1) - 0.5);
  yAxis->setRange(-0.5, std::max(rows, 1) - 0.5);
  label();
}

void HeatmapPlot::setNeedle(int64_t begin, int64_t end) {
  const auto& cols = data_.columns;
  const auto first = std::lower_bound(cols.begin(), cols.end(), int32_t(std::max<int64_t>(begin, 0)));
  const auto last = std::lower_bound(first, cols.end(), int32_t(std::clamp<int64_t>(end, 0, INT32_MAX)));
  const bool shown = begin >= 0 && end > begin && first != last;
  needle_->setVisible(shown);
  if (!shown) return;
  needle_->topLeft->setCoords(double(first - cols.begin()) - 0.5, 0);
  needle_->bottomRight->setCoords(double(last - cols.begin()) - 0.5, 1);
}

void HeatmapPlot::resizeEvent(QResizeEvent* event) {
  QCustomPlot::resizeEvent(event);
  fit_titles(this);
  label();
}

void HeatmapPlot::updateLayout() {
  // Which columns are named depends on the cells' width, known only after the
  // layout; labelled before it (in setData) from the last layout's width, the
  // names of one step changed from one draw to the next as the query
  // positions' digits moved the left margin. The column labels' room is fixed
  // (fix_vertical_room), so a second layout gives the cells the same width.
  QCustomPlot::updateLayout();
  if (axisRect()->width() == labelled_width_) return;
  label();
  QCustomPlot::updateLayout();
}

void HeatmapPlot::label() {
  labelled_width_ = axisRect()->width();
  // The note where there are no cells, in lines that fit the cells' width (clipped, it said the opposite).
  const QString note = data_.note.empty() ? QString("no attention captured yet") : QString::fromStdString(data_.note);
  note_->setText(wrap_to_width(note, QFontMetricsF(note_->font()), std::max(40, axisRect()->width() - 8)));
  // Name as many columns as fit side by side (rotated labels, one text line
  // apart), the brightest first: those are the tokens the eye goes to.
  const int rows = data_.rows(), cols = data_.cols();
  columns_ticker_->clear();
  const QFontMetricsF fm(xAxis->tickLabelFont());
  const double label_px = fm.height() + 3;
  const double column_px = double(std::max(60, axisRect()->width())) / std::max(cols, 1);
  const int gap = int(std::ceil(label_px / column_px));
  for (int c : spaced_by_importance(data_.column_mass, gap)) {
    QString label = QString::fromStdString(data_.labels[size_t(c)]).trimmed();
    if (label.isEmpty()) label = "␣";
    columns_ticker_->addTick(c, fm.elidedText(label, Qt::ElideRight, labelExtent()));
  }
  // Rows: numbers at least a text line apart, the newest always named (prefill
  // chunks put many rows in a few pixels; their labels must not pile up).
  rows_ticker_->clear();
  const double row_px = double(std::max(20, axisRect()->height())) / std::max(rows, 1);
  const int every_row = std::max(1, int(std::ceil((fm.height() + 2) / row_px)));
  for (int r = rows - 1; r >= 0; r -= every_row) rows_ticker_->addTick(r, QString::number(data_.query_positions[size_t(r)]));
}

bool HeatmapPlot::cellAt(QPointF point, int& row, int& col) const {
  col = int(std::lround(xAxis->pixelToCoord(point.x())));
  row = int(std::lround(yAxis->pixelToCoord(point.y())));
  return col >= 0 && row >= 0 && col < data_.cols() && row < data_.rows() &&
         axisRect()->rect().contains(point.toPoint());
}

QString HeatmapPlot::pieceInWord(int col) const {
  const QString word = QString::fromStdString(data_.labels[size_t(col)]);
  const QString piece = data_.pieces.size() > size_t(col) ? QString::fromStdString(data_.pieces[size_t(col)]) : word;
  return piece == word ? word : QString("%1 (in “%2”)").arg(piece, word.trimmed());
}

void HeatmapPlot::mouseMoveEvent(QMouseEvent* event) {
  int row, col;
  if (cellAt(event->position(), row, col)) {
    const double p = data_.at(row, col), score = data_.column_scores[size_t(col)];
    QToolTip::showText(event->globalPosition().toPoint(),
                       QString("<b>%1</b> · key position %2<br>query “%3” at position %4<br>probability %5<br>accumulated score %6")
                           .arg(pieceInWord(col).toHtmlEscaped())
                           .arg(data_.columns[size_t(col)])
                           .arg(QString::fromStdString(data_.query_labels.size() > size_t(row) ? data_.query_labels[size_t(row)] : "").toHtmlEscaped())
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
