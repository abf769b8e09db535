#include "ui/views/head_view.h"

#include <QKeyEvent>
#include <cmath>
#include <algorithm>
#include <QMouseEvent>
#include <QPainter>
#include <QToolButton>

#include "ui/plot/theme.h"

namespace h2o::ui {
namespace {

// The first wording that fits `width` whole; the last one elided where none does.
QString first_that_fits(const QStringList& wordings, const QFontMetricsF& fm, double width) {
  for (const QString& w : wordings)
    if (fm.horizontalAdvance(w) <= width) return w;
  return fm.elidedText(wordings.back(), Qt::ElideRight, width);
}

}  // namespace

HeadView::HeadView(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_OpaquePaintEvent);
  setToolTip("Head view: where a step's query looks in each cache (layer and head as chosen above).\n"
             "Line strength = attention weight; key colour = its fate. Click a key to inspect it.\n"
             "◀ / ▶ (Left / Right): the query of the step before / after; End: the shown step's again.");
  setFocusPolicy(Qt::StrongFocus);
  const auto button = [this](const QString& text, const QString& tip, auto step) {
    auto* b = new QToolButton(this);
    b->setText(text);
    b->setToolTip(tip);
    b->setAutoRaise(true);
    connect(b, &QToolButton::clicked, this, [this, step] { emit queryStepRequested(step()); });
    return b;
  };
  earlier_ = button("◀ earlier query", "The query of the step before (Left)", [this] { return std::max<qint64>(0, data_.query_step - 1); });
  later_ = button("later query ▶", "The query of the step after (Right)", [this] { return data_.query_step + 1; });
  newest_ = button("shown step", "Follow the shown step's query again (End)", [] { return qint64(-1); });
  earlier_->setObjectName("head_view_earlier");
  later_->setObjectName("head_view_later");
  newest_->setObjectName("head_view_newest");
}

int HeadView::barHeight() const { return earlier_->sizeHint().height() + 2; }

void HeadView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  int x = 4;
  for (QToolButton* b : {earlier_, later_, newest_}) {
    b->adjustSize();
    b->move(x, height() - barHeight() + 1);
    x += b->width() + 4;
  }
}

void HeadView::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Left: earlier_->click(); return;
    case Qt::Key_Right: later_->click(); return;
    case Qt::Key_End: newest_->click(); return;
    default: QWidget::keyPressEvent(event);
  }
}

void HeadView::setData(const HeadViewData& data) {
  data_ = data;
  update();
}

std::vector<HeadView::Geometry> HeadView::layout() const {
  std::vector<Geometry> out;
  const int n = int(data_.panes.size());
  if (n == 0) return out;
  const QFontMetricsF fm(font());
  const double top = fm.height() * 2.4, line = fm.height() + 2;
  const double w = double(width()) / n;
  for (int i = 0; i < n; ++i) {
    Geometry g;
    g.block = QRectF(i * w, 0, w, height());
    const auto& pane = data_.panes[size_t(i)];
    // Room for the query token and its position, a key's token, position and weight; the lines
    // get the rest (at least 30 % of the block).
    const double query_w = std::min(w * 0.28, fm.horizontalAdvance("MMMMMM · 00000"));
    const double text_w = std::min(w * 0.42, fm.horizontalAdvance("MMMMMMMMM 00000 0.0000"));
    // As many keys as have a text line each (the strongest, in stream order): more would overlap
    // into noise in a short window; the others get no box (null).
    const double bottom = height() - barHeight();
    const size_t fit = size_t(std::max(1.0, std::floor((bottom - top - 4) / line)));
    std::vector<bool> shown(pane.keys.size(), true);
    if (pane.keys.size() > fit) {
      std::vector<size_t> order(pane.keys.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pane.keys[a].weight > pane.keys[b].weight; });
      for (size_t r = fit; r < order.size(); ++r) shown[order[r]] = false;
    }
    const double rows = double(std::max<size_t>(std::min(fit, pane.keys.size()), 1));
    const double step = std::min(line * 1.25, (bottom - top - 4) / rows);
    g.query = QRectF(g.block.left() + 6, top + (bottom - top) / 2 - line / 2, query_w, line);
    int row = 0;
    for (size_t k = 0; k < pane.keys.size(); ++k)
      g.keys.push_back(shown[k] ? QRectF(g.block.right() - text_w - 6, top + row++ * step, text_w, std::min(line, step)) : QRectF());
    out.push_back(std::move(g));
  }
  return out;
}

// Two significant digits: a full cache's weights spread over hundreds of keys (0.0041), which two
// decimals all showed as "0.00".
QString HeadView::weightText(double w) {
  if (!(w > 0)) return "0";
  const int decimals = std::clamp(1 - int(std::floor(std::log10(w))), 2, 5);
  return QString::number(w, 'f', decimals);
}

QRectF HeadView::keyBox(size_t pane, size_t key) const {
  const auto g = layout();
  return pane < g.size() && key < g[pane].keys.size() ? g[pane].keys[key] : QRectF();
}

QLineF HeadView::lineTo(size_t pane, size_t key) const {
  const auto g = layout();
  if (pane >= g.size() || key >= g[pane].keys.size() || g[pane].keys[key].isNull()) return {};
  return QLineF(QPointF(g[pane].query.right() + 2, g[pane].query.center().y()),
                QPointF(g[pane].keys[key].left() - 2, g[pane].keys[key].center().y()));
}

void HeadView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), background_color());
  p.setRenderHint(QPainter::Antialiasing);
  const QFontMetricsF fm(font());
  if (data_.panes.empty()) {
    p.setPen(muted_text_color());
    p.drawText(rect(), Qt::AlignCenter, "No attention recorded at this step yet.");
    return;
  }
  const auto geometry = layout();
  for (size_t i = 0; i < geometry.size(); ++i) {
    const Geometry& g = geometry[i];
    const HeadViewPane& pane = data_.panes[i];
    const QColor color = policy_color(pane.config);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(color);
    const QString head = data_.head < 0 ? "mean over heads" : QString("head %1").arg(data_.head);
    const QString short_head = data_.head < 0 ? "mean" : QString("H%1").arg(data_.head);
    const QString title = policy_title(pane.config);
    const double room = g.block.width() - 12;
    // Whole words where they fit, shorter ones in a narrow block (the tooltip says the rest).
    p.drawText(QRectF(g.block.left() + 6, 2, room, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter,
               first_that_fits({QString("%1 · layer %2 · %3 · query of step %4").arg(title).arg(data_.layer).arg(head).arg(data_.query_step),
                                QString("%1 · L%2 %3 · step %4").arg(title).arg(data_.layer).arg(short_head).arg(data_.query_step),
                                title},
                               QFontMetricsF(bold), room));
    p.setFont(font());
    p.setPen(muted_text_color());
    const auto drawn = size_t(std::count_if(g.keys.begin(), g.keys.end(), [](const QRectF& r) { return !r.isNull(); }));
    const QStringList said =
        !pane.keys_attended ? QStringList{"no capture of this layer at this step", "not captured"}
        : pane.keys_attended >= pane.keys_cached
            ? QStringList{QString("%1 strongest of %2 keys attended").arg(drawn).arg(pane.keys_attended),
                          QString("%1 of %2 keys").arg(drawn).arg(pane.keys_attended)}
            : QStringList{QString("%1 strongest of the %2 keys recorded (the first and the latest of %3 cached)")
                              .arg(drawn).arg(pane.keys_attended).arg(pane.keys_cached),
                          QString("%1 strongest of %2 recorded keys (%3 cached)").arg(drawn).arg(pane.keys_attended).arg(pane.keys_cached),
                          QString("%1 of %2 recorded keys").arg(drawn).arg(pane.keys_attended)};
    p.drawText(QRectF(g.block.left() + 6, fm.height() + 2, room, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter,
               first_that_fits(said, fm, room));
    if (pane.keys.empty()) continue;
    // Lines first, so the texts sit on top.
    for (size_t k = 0; k < pane.keys.size(); ++k) {
      if (g.keys[k].isNull()) continue;
      const double strength = pane.top_weight > 0 ? pane.keys[k].weight / pane.top_weight : 0;
      QColor c = color;
      c.setAlphaF(std::clamp(0.08 + 0.92 * strength, 0.0, 1.0));
      p.setPen(QPen(c, std::max(0.6, 4.0 * strength * std::max(1.0, ui_scale()))));
      p.drawLine(lineTo(i, k));
    }
    p.setPen(text_color());
    p.fillRect(g.query, current_theme() == ThemeKind::Dark ? QColor(255, 255, 255, 24) : QColor(0, 0, 0, 16));
    p.drawText(g.query.adjusted(3, 0, -3, 0), Qt::AlignRight | Qt::AlignVCenter,
               fm.elidedText(QString("%1 · %2").arg(QString::fromStdString(pane.query_text).trimmed()).arg(pane.query_position),
                             Qt::ElideLeft, g.query.width() - 6));
    for (size_t k = 0; k < pane.keys.size(); ++k) {
      if (g.keys[k].isNull()) continue;
      const HeadViewKey& key = pane.keys[k];
      p.setPen(fate_color(key.fate));
      QString label = QString::fromStdString(key.text).trimmed();
      if (label.isEmpty()) label = "␣";
      // The weight always whole at the right; the token and its position elided before it.
      const QString weight = weightText(key.weight);
      const QRectF box = g.keys[k].adjusted(3, 0, 0, 0);
      const double weight_w = fm.horizontalAdvance(weight);
      p.drawText(box, Qt::AlignRight | Qt::AlignVCenter, weight);
      p.drawText(box.adjusted(0, 0, -weight_w - fm.horizontalAdvance("  "), 0), Qt::AlignLeft | Qt::AlignVCenter,
                 fm.elidedText(QString("%1 · %2").arg(label).arg(key.position), Qt::ElideRight,
                               box.width() - weight_w - fm.horizontalAdvance("  ")));
    }
  }
}

void HeadView::mousePressEvent(QMouseEvent* event) {
  const auto geometry = layout();
  for (size_t i = 0; i < geometry.size(); ++i)
    for (size_t k = 0; k < geometry[i].keys.size(); ++k)
      if (geometry[i].keys[k].contains(event->position())) emit positionClicked(data_.panes[i].keys[k].position, int(i));
}

}  // namespace h2o::ui
