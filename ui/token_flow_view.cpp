#include "token_flow_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "ui/theme.h"

namespace h2o::ui {

TokenFlowView::TokenFlowView(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumHeight(80);
  QFont f("DejaVu Sans Mono");
  f.setStyleHint(QFont::Monospace);
  f.setPointSizeF(8.5);
  setFont(f);
  setCursor(Qt::PointingHandCursor);
}

void TokenFlowView::setTokens(std::vector<TokenCell> tokens) {
  tokens_ = std::move(tokens);
  laid_out_width_ = -1;
  update();
}

void TokenFlowView::setHighlight(int64_t position) {
  highlight_ = position;
  update();
}

double TokenFlowView::advance(const QString& piece) {
  if (const auto it = advance_.constFind(piece); it != advance_.constEnd()) return *it;
  if (advance_.size() > 50000) advance_.clear();  // a bound, for endless runs with sampled junk
  const double w = QFontMetricsF(font()).horizontalAdvance(piece);
  advance_.insert(piece, w);
  return w;
}

// Flows the tokens left to right, breaking lines at newlines and at the edge.
void TokenFlowView::layout() {
  placed_.clear();
  const QFontMetricsF fm(font());
  const double line_h = fm.height() + 2, margin = 4, width = std::max(40, this->width()) - 2 * margin;
  double x = 0, y = 0;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const QStringList lines = QString::fromStdString(tokens_[i].text).split('\n');
    for (int l = 0; l < lines.size(); ++l) {
      if (l > 0) {
        // Newlines show as a small mark, then break.
        placed_.push_back({QRectF(margin + x, y, advance(QString(QChar(0x21b5))), line_h), i, QString(QChar(0x21b5))});
        x = 0;
        y += line_h;
      }
      QString piece = lines[l];
      if (piece.isEmpty()) continue;
      double w = advance(piece);
      if (x > 0 && x + w > width) {
        x = 0;
        y += line_h;
        if (piece.startsWith(' ')) {
          piece.remove(0, 1);
          w = advance(piece);
        }
      }
      placed_.push_back({QRectF(margin + x, y, w, line_h), i, piece});
      x += w;
    }
  }
  content_height_ = y + line_h;
  laid_out_width_ = this->width();
}

void TokenFlowView::paintEvent(QPaintEvent*) {
  if (laid_out_width_ != width()) layout();
  QPainter p(this);
  p.fillRect(rect(), background_color());
  // Keep the newest line in view: shift everything up when the text overflows.
  const double shift = std::max(0.0, content_height_ - height() + 4);
  const QFontMetricsF fm(font());
  p.setFont(font());
  for (const Placed& placed : placed_) {
    const QRectF r = placed.rect.translated(0, -shift);
    if (r.bottom() < 0) continue;
    const TokenCell& t = tokens_[placed.token];
    if (t.prompt) p.fillRect(r, QColor(255, 255, 255, 14));
    if (t.position == highlight_) p.fillRect(r.adjusted(-1, 0, 1, 0), QColor(255, 255, 255, 60));
    QColor c = fate_color(t.fate);
    if (t.prompt && t.fate != Fate::Evicted) c = c.darker(125);
    p.setPen(c);
    p.drawText(QPointF(r.left(), r.top() + fm.ascent() + 1), placed.text);
    if (t.fate == Fate::Unborn) p.drawLine(QPointF(r.left(), r.bottom() - 1), QPointF(r.right(), r.bottom() - 1));
  }
}

int TokenFlowView::hit(QPointF point) const {
  const double shift = std::max(0.0, content_height_ - height() + 4);
  for (const Placed& placed : placed_)
    if (placed.rect.translated(0, -shift).contains(point)) return int(placed.token);
  return -1;
}

void TokenFlowView::mousePressEvent(QMouseEvent* event) {
  const int i = hit(event->position());
  if (i >= 0 && event->button() == Qt::LeftButton) emit tokenClicked(tokens_[size_t(i)].position);
}

bool TokenFlowView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int i = hit(help->pos());
    if (i < 0) {
      QToolTip::hideText();
    } else {
      const TokenCell& t = tokens_[size_t(i)];
      QToolTip::showText(help->globalPos(), QString("<b>%1</b> · position %2<br>%3%4<br><i>click: score history and evictions</i>")
                                                .arg(QString::fromStdString(t.text).toHtmlEscaped())
                                                .arg(t.position)
                                                .arg(fate_tooltip(t.fate, &policy_))
                                                .arg(t.prompt ? " · prompt" : ""),
                         this);
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace h2o::ui
