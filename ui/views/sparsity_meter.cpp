#include "ui/views/sparsity_meter.h"

#include <QPainter>

#include "ui/plot/theme.h"

namespace h2o::ui {

SparsityMeter::SparsityMeter(QWidget* parent) : QWidget(parent) {
  setFixedHeight(int(16 * std::max(1.0, ui_scale())));
  setToolTip("Attention sparsity: share of the latest step's attention mass (shown layer/head) on its top-k keys");
}

QFont SparsityMeter::labelFont() const {
  QFont f = font();
  f.setPointSizeF(scaled_pt(7.5));
  return f;
}

QString SparsityMeter::label() const {
  return std::isnan(share_) ? QString("attention on top-%1 keys: —").arg(top_k_)
                            : QString("attention on top-%1 keys: %2 %").arg(top_k_).arg(share_ * 100, 0, 'f', 1);
}

QSize SparsityMeter::sizeHint() const {
  const QString widest = QString("attention on top-%1 keys: 100.0 %").arg(top_k_);
  return {QFontMetrics(labelFont()).horizontalAdvance(widest) + 14, height()};
}

void SparsityMeter::setValue(double share, int top_k, const QColor& color) {
  share_ = share;
  if (top_k != top_k_) updateGeometry();  // its words' width
  top_k_ = top_k;
  color_ = color;
  update();
}

void SparsityMeter::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QRect r = rect().adjusted(0, 1, -1, -2);
  p.fillRect(r, grid_color());
  if (!std::isnan(share_)) {
    QColor c = color_;
    c.setAlpha(170);
    p.fillRect(QRect(r.left(), r.top(), int(r.width() * std::clamp(share_, 0.0, 1.0)), r.height()), c);
  }
  p.setPen(text_color());
  p.setFont(labelFont());
  p.drawText(r.adjusted(6, 0, -6, 0), Qt::AlignVCenter | Qt::AlignLeft, label());
}

}  // namespace h2o::ui
