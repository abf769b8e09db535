#include "ui/plot/plot_helpers.h"

#include <QRegularExpression>

#include "ui/plot/theme.h"

namespace h2o::ui {

QCPTextElement* add_title(QCustomPlot* plot, const QString& title, double point_size) {
  plot->plotLayout()->insertRow(0);
  auto* caption = new QCPTextElement(plot, title, QFont(plot->font().family(), 9, QFont::Bold));
  caption->setProperty("h2o_pt", point_size);
  QFont f = caption->font();
  f.setPointSizeF(scaled_pt(point_size));
  caption->setFont(f);
  caption->setTextColor(text_color());
  caption->setMargins(QMargins(2, 1, 2, 0));
  plot->plotLayout()->addElement(0, 0, caption);
  set_title(caption, {title, {}, {}});
  plot->plotLayout()->setRowStretchFactor(0, 0.001);
  return caption;
}

void set_title(QCPTextElement* title, const PlotTitle& text) {
  title->setProperty("h2o_full", text.shown);
  title->setProperty("h2o_compact", text.compact);
  title->setProperty("h2o_export", text.exported.isEmpty() ? text.shown : text.exported);
  QCustomPlot* plot = title->parentPlot();
  const QFontMetricsF fm(title->font());
  // The title's column may share the width with a colour scale beside the axis rect.
  const int room = std::max(40, plot->width() - 8 - plot->property("h2o_title_inset").toInt());
  const QString& fitting = fm.horizontalAdvance(text.shown) <= room || text.compact.isEmpty() ? text.shown : text.compact;
  title->setText(fm.elidedText(fitting, Qt::ElideRight, room));
}

ExportTitles::ExportTitles(QCustomPlot* plot) : plot_(plot) {
  for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
    if (auto* t = qobject_cast<QCPTextElement*>(e); t && t->property("h2o_export").isValid()) {
      t->setText(t->property("h2o_export").toString());
      const int text = int(std::ceil(QFontMetricsF(t->font()).horizontalAdvance(t->text())));
      // The title's column shares the width with whatever sits beside it (a colour scale).
      const int beside = std::max(0, plot->width() - t->outerRect().width());
      width_needed_ = std::max(width_needed_, text + 16 + beside);
    }
}

ExportTitles::~ExportTitles() { fit_titles(plot_); }

void fit_titles(QCustomPlot* plot) {
  for (QCPLayoutElement* e : plot->plotLayout()->elements(false))
    if (auto* t = qobject_cast<QCPTextElement*>(e); t && t->property("h2o_full").isValid())
      set_title(t, {t->property("h2o_full").toString(), t->property("h2o_compact").toString(),
                    t->property("h2o_export").toString()});
}

namespace {
// Keeps a plot's titles elided and its legend wrapped to its width as it is resized.
class FitOnResize : public QObject {
 public:
  using QObject::QObject;
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::Resize)
      if (auto* plot = qobject_cast<QCustomPlot*>(watched)) {
        fit_titles(plot);
        fit_legend(plot);
      }
    return false;
  }
};
}  // namespace

QCPRange cell_centres(int cells, double first, double width) {
  if (cells <= 1) return QCPRange(first - width / 2, first + width / 2);
  return QCPRange(first, first + width * (cells - 1));
}

QString plain_text(const QString& rich) {
  static const QRegularExpression tags("<[^>]*>");
  return QString(rich).remove(tags);
}

QString wrap_to_width(const QString& text, const QFontMetricsF& metrics, double width) {
  QStringList lines;
  QString line;
  for (const QString& word : text.split(' ', Qt::SkipEmptyParts)) {
    const QString longer = line.isEmpty() ? word : line + ' ' + word;
    if (!line.isEmpty() && metrics.horizontalAdvance(longer) > width) {
      lines << line;
      line = word;
    } else {
      line = longer;
    }
  }
  if (!line.isEmpty()) lines << line;
  return lines.join('\n');
}

void fit_legend(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  if (!legend->visible() || legend->itemCount() == 0 || legend->layout() != plot->plotLayout()) return;
  // Whole entries only: as many per line as fit, the rest on the next lines.
  double widest = 0;
  for (int i = 0; i < legend->elementCount(); ++i)
    if (QCPLayoutElement* item = legend->elementAt(i)) widest = std::max(widest, double(item->minimumOuterSizeHint().width()));
  if (widest <= 0) return;
  const int per_line = std::max(1, int((plot->width() - 10) / (widest + legend->columnSpacing())));
  if (legend->wrap() != per_line) {
    legend->setWrap(per_line);
    legend->setFillOrder(QCPLegend::foColumnsFirst, true);
  }
}

void keep_cells_at_least(QCustomPlot* plot, int cells, int chrome_guess) {
  const bool connected = plot->property("h2o_min_cells").isValid();
  plot->setProperty("h2o_min_cells", cells);
  plot->setMinimumHeight(cells + chrome_guess);
  if (connected) return;
  QObject::connect(plot, &QCustomPlot::afterLayout, plot, [plot] {
    // Measured only on the window's own layout: not an export's, nor a hidden or squeezed widget's.
    if (plot->property("h2o_exporting").toBool() || !plot->isVisible() || plot->viewport() != plot->rect()) return;
    const int chrome = plot->height() - plot->axisRect()->height();
    const int need = plot->property("h2o_min_cells").toInt() + chrome;
    if (plot->height() > 0 && need > plot->minimumHeight()) plot->setMinimumHeight(need);
  });
}

void place_context_label(QCPItemText* label, QCPAxis* x, double coord, int64_t context) {
  const double at = x->coordToPixel(coord);
  const QFontMetricsF fm(label->font());
  QString text = QString("trained context %1").arg(context);
  const double right = x->axisRect()->right() - at, left = at - x->axisRect()->left();
  if (fm.horizontalAdvance(text + "  ") > std::max(right, left)) text = QString("context %1").arg(context);
  // A small plot at a large --ui-scale: the number alone, by its dashed line, rather than "conte".
  if (fm.horizontalAdvance(text + "  ") > std::max(right, left)) text = QString::number(context);
  const bool on_right = right >= fm.horizontalAdvance(text + "  ") || right >= left;
  label->setPositionAlignment((on_right ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignTop);
  label->setText(on_right ? " " + text : text + " ");
  label->position->setCoords(coord, 0.02);
}

void park_export_only(QCustomPlot* plot, QCPLayoutElement* element) {
  element->setVisible(false);
  plot->plotLayout()->take(element);
  plot->plotLayout()->simplify();
  element->setParent(plot);  // owned by the plot while out of its layout
  plot->setProperty(kExportOnly, QVariant::fromValue<QObject*>(element));
}

std::vector<QCPLayoutElement*> cell_frames(QCustomPlot* plot) {
  std::vector<QCPLayoutElement*> out;
  for (QCPLayoutElement* e : plot->plotLayout()->elements(false))
    if (qobject_cast<QCPAxisRect*>(e) || qobject_cast<QCPColorScale*>(e)) out.push_back(e);
  return out;
}

int fix_vertical_room(QCustomPlot* plot, QCPTextElement* title, int bottom) {
  constexpr int kTop = 2;
  plot->plotLayout()->setRowSpacing(1);
  for (QCPLayoutElement* e : cell_frames(plot)) {
    e->setAutoMargins(QCP::msLeft | QCP::msRight);
    e->setMargins(QMargins(0, kTop, 0, bottom));
  }
  return QFontMetrics(title->font()).height() + title->margins().top() + title->margins().bottom() + 1 + kTop + bottom;
}

QCustomPlot* make_plot(const QString& title, const QString& x_label, const QString& y_label, QWidget* parent) {
  auto* plot = new QCustomPlot(parent);
  style_plot(plot);
  add_title(plot, title);
  plot->xAxis->setLabel(x_label);
  plot->yAxis->setLabel(y_label);
  plot->setMinimumSize(160, 100);  // explicit: a long legend must not widen the window
  plot->setObjectName(title);
  plot->installEventFilter(new FitOnResize(plot));
  rescale(plot);  // the empty state until the first data
  return plot;
}

void set_policy_graphs(QCustomPlot* plot, const std::vector<PolicyConfig>& policies) {
  plot->clearGraphs();
  for (const PolicyConfig& policy : policies) {
    QCPGraph* g = plot->addGraph();
    g->setProperty("h2o_width", 1.8);
    g->setPen(QPen(policy_color(policy), 1.8 * std::max(1.0, ui_scale())));
    g->setName(short_policy_title(policy));
    g->setAdaptiveSampling(true);
  }
  fit_legend(plot);
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
  legend->setColumnSpacing(8);
  legend->setIconSize(14, 8);
  legend->setVisible(true);
}

void set_series(QCPGraph* graph, const Series& series) {
  graph->setData(QVector<double>(series.x.begin(), series.x.end()), QVector<double>(series.y.begin(), series.y.end()),
                 true);
}

void rescale(QCustomPlot* plot, bool include_zero, const AxisRange& y) {
  bool any = false;
  for (int i = 0; i < plot->graphCount(); ++i) any = any || !plot->graph(i)->data()->isEmpty();
  // No data: no numbers either (an empty plot read 0-5 on both axes, as if it measured something).
  for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) axis->setTickLabels(any);
  if (!any) {
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis})
      axis->setRange(axis->scaleType() == QCPAxis::stLogarithmic ? QCPRange(1, 10) : QCPRange(0, 1));
    return;
  }
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
  if (y.valid()) plot->yAxis->setRange(include_zero && y.lower > 0 ? 0 : y.lower, y.upper);
}

void thin_ticks(QCustomPlot* plot) {
  const QFontMetricsF fm(plot->xAxis->tickLabelFont());
  // A label of ~7 characters on x needs that much room and a gap; on y, about two text lines.
  const int x_ticks = std::clamp(int(plot->axisRect()->width() / (fm.horizontalAdvance("0000000") + 12)), 2, 8);
  const int y_ticks = std::clamp(int(plot->axisRect()->height() / (fm.height() * 2.2)), 2, 6);
  if (plot->xAxis->scaleType() == QCPAxis::stLinear) plot->xAxis->ticker()->setTickCount(x_ticks);
  if (plot->yAxis->scaleType() == QCPAxis::stLinear) plot->yAxis->ticker()->setTickCount(y_ticks);
}

bool plot_has_data(QCustomPlot* plot) {
  for (int i = 0; i < plot->plottableCount(); ++i) {
    QCPAbstractPlottable* p = plot->plottable(i);
    if (auto* g = qobject_cast<QCPGraph*>(p); g && !g->data()->isEmpty()) return true;
    if (auto* m = qobject_cast<QCPColorMap*>(p); m && m->property("h2o_has_data").toBool()) return true;
  }
  return false;
}

}  // namespace h2o::ui
