#include "ui/views/head_view.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolButton>

#include "ui/plot/theme.h"

namespace h2o::ui {

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
    const double text_w = std::min(w * 0.34, fm.horizontalAdvance("MMMMMMMMM 00000"));
    const double rows = std::max<size_t>(pane.keys.size(), 1);
    const double bottom = height() - barHeight();
    const double step = std::min(line * 1.25, (bottom - top - 4) / rows);
    g.query = QRectF(g.block.left() + 6, top + (bottom - top) / 2 - line / 2, text_w, line);
    for (size_t k = 0; k < pane.keys.size(); ++k)
      g.keys.push_back(QRectF(g.block.right() - text_w - 6, top + k * step, text_w, std::min(line, step)));
    out.push_back(std::move(g));
  }
  return out;
}

QLineF HeadView::lineTo(size_t pane, size_t key) const {
  const auto g = layout();
  if (pane >= g.size() || key >= g[pane].keys.size()) return {};
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
    p.drawText(QRectF(g.block.left() + 6, 2, g.block.width() - 12, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(QString("%1 · layer %2 · %3 · query of step %4")
                                 .arg(policy_title(pane.config))
                                 .arg(data_.layer)
                                 .arg(head)
                                 .arg(data_.query_step),
                             Qt::ElideRight, g.block.width() - 12));
    p.setFont(font());
    p.setPen(muted_text_color());
    p.drawText(QRectF(g.block.left() + 6, fm.height() + 2, g.block.width() - 12, fm.height() + 2),
               Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(!pane.keys_attended ? QString("no capture of this layer at this step")
                             : pane.keys_attended >= pane.keys_cached
                                 ? QString("%1 strongest of %2 keys attended").arg(pane.keys.size()).arg(pane.keys_attended)
                                 : QString("%1 strongest of the %2 keys recorded (the first and the latest of %3 cached)")
                                       .arg(pane.keys.size())
                                       .arg(pane.keys_attended)
                                       .arg(pane.keys_cached),
                             Qt::ElideRight, g.block.width() - 12));
    if (pane.keys.empty()) continue;
    // Lines first, so the texts sit on top.
    for (size_t k = 0; k < pane.keys.size(); ++k) {
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
      const HeadViewKey& key = pane.keys[k];
      p.setPen(fate_color(key.fate));
      QString label = QString::fromStdString(key.text).trimmed();
      if (label.isEmpty()) label = "␣";
      p.drawText(g.keys[k].adjusted(3, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 fm.elidedText(QString("%1 · %2  %3").arg(label).arg(key.position).arg(key.weight, 0, 'f', 2), Qt::ElideRight,
                               g.keys[k].width()));
    }
  }
}

void HeadView::mousePressEvent(QMouseEvent* event) {
  const auto geometry = layout();
  for (size_t i = 0; i < geometry.size(); ++i)
    for (size_t k = 0; k < geometry[i].keys.size(); ++k)
      if (geometry[i].keys[k].contains(event->position())) emit positionClicked(data_.panes[i].keys[k].position);
}

}  // namespace h2o::ui
