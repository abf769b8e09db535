#include "ui/views/token_flow_view.h"

#include <algorithm>
#include <cmath>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>

#include "ui/plot/theme.h"

namespace h2o::ui {

// The note's font is the pane's small print, not the text's (it need not be read from afar).
static QFont note_font(QFont f) {
  f.setPointSizeF(scaled_pt(7.5));
  return f;
}

TokenFlowView::TokenFlowView(QWidget* parent) : QWidget(parent), bar_(new QScrollBar(Qt::Vertical, this)) {
  setAttribute(Qt::WA_OpaquePaintEvent);
  restyle();
  setCursor(Qt::PointingHandCursor);
  bar_->setCursor(Qt::ArrowCursor);
  bar_->setToolTip("Scroll through the whole stream; at the bottom the text follows the newest tokens");
  connect(bar_, &QScrollBar::valueChanged, this, [this](int value) {
    if (updating_bar_) return;
    requestFrom(value >= bar_->maximum() ? -1 : int64_t(value));
  });
}

void TokenFlowView::restyle() {
  // Two lines of text at the panes' usual size at least (the newest tokens and the line before
  // them), whatever the text's scale: fitFont makes larger text fit two lines of the height the
  // pane's splitter gives it (setTextEmphasis), and a larger least would turn four panes' 2x2 grid
  // into tabs at 1280x720 presenting (it fits by 2 px). The "scrolled back" strip takes no least.
  setMinimumHeight(2 * (QFontMetrics(textFontAt(1.0)).height() + 2) + 6);
  text_font_ = QFont();  // fitFont sets it anew
  fitFont();
}

// Noto Sans CJK and Noto Color Emoji (README's install command) fill in what DejaVu lacks.
QFont TokenFlowView::textFontAt(double scale) {
  QFont f("DejaVu Sans Mono");
  f.setStyleHint(QFont::Monospace);
  f.setPointSizeF(scaled_pt(8.5) * scale);
  return f;
}

// The text at its scale where two lines fit the view's height, else as large as fits two (never
// below the usual size). The view's own font, not the widget's: the app's style sheet, set again on
// every change of look, gives a widget back the font it had when first polished (F11 broke the text
// apart, and presentation mode's larger text was lost).
void TokenFlowView::fitFont() {
  double scale = text_scale_;
  while (scale > 1.0 && 2 * (QFontMetrics(textFontAt(scale)).height() + 2) + 6 > height())
    scale = std::max(1.0, scale / 1.08);
  const QFont f = textFontAt(std::min(scale, text_scale_));
  if (f == text_font_) return;
  text_font_ = f;
  advance_.clear();
  laid_out_width_ = -1;
  update();
}

void TokenFlowView::setTextScale(double scale) {
  scale = std::clamp(scale, kLeastTextScale, kMostTextScale);
  if (scale == text_scale_) return;
  text_scale_ = scale;
  restyle();
}

void TokenFlowView::setTokens(std::vector<TokenCell> tokens, bool follows_end, int64_t stream_length) {
  tokens_ = std::move(tokens);
  follows_end_ = follows_end;
  stream_length_ = stream_length;
  laid_out_width_ = -1;
  // The bar counts positions: at the bottom while following, else at the window's first position.
  updating_bar_ = true;
  const int length = int(std::min<int64_t>(stream_length, INT32_MAX));
  const int first = tokens_.empty() ? 0 : int(tokens_.front().first_position);
  const int page = std::max(1, int(std::min<size_t>(tokens_.size(), 200)));
  bar_->setRange(0, std::max(0, length - page));
  bar_->setPageStep(page);
  bar_->setSingleStep(8);
  bar_->setValue(follows_end ? bar_->maximum() : std::min(first, bar_->maximum() - 1));
  updating_bar_ = false;
  update();
}

void TokenFlowView::setHighlight(int64_t position) {
  highlight_ = position;
  update();
}

void TokenFlowView::requestFrom(int64_t first) { emit scrollRequested(first); }

double TokenFlowView::advance(const QString& piece) {
  if (const auto it = advance_.constFind(piece); it != advance_.constEnd()) return *it;
  if (advance_.size() > 50000) advance_.clear();  // a bound, for endless runs with sampled junk
  const double w = QFontMetricsF(text_font_).horizontalAdvance(piece);
  advance_.insert(piece, w);
  return w;
}

void TokenFlowView::resizeEvent(QResizeEvent*) {
  laid_out_width_ = -1;
  fitFont();
  const int w = bar_->sizeHint().width();
  bar_->setGeometry(width() - w, 0, w, height());
}

// Flows the tokens left to right, breaking lines at newlines and at the edge.
void TokenFlowView::layout() {
  placed_.clear();
  const QFontMetricsF fm(text_font_);
  line_height_ = fm.height() + 2;
  const double margin = 4, width = std::max(40, this->width() - bar_->width()) - 2 * margin;
  double x = 0, y = 0;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const QStringList lines = QString::fromStdString(tokens_[i].text).split('\n');
    for (int l = 0; l < lines.size(); ++l) {
      if (l > 0) {
        // Newlines show as a small mark, then break.
        placed_.push_back({QRectF(margin + x, y, advance(QString(QChar(0x21b5))), line_height_), i, QString(QChar(0x21b5))});
        x = 0;
        y += line_height_;
      }
      QString piece = lines[l];
      if (piece.isEmpty()) continue;
      double w = advance(piece);
      if (x > 0 && x + w > width) {
        x = 0;
        y += line_height_;
        if (piece.startsWith(' ')) {
          piece.remove(0, 1);
          w = advance(piece);
        }
      }
      placed_.push_back({QRectF(margin + x, y, w, line_height_), i, piece});
      x += w;
    }
  }
  content_height_ = y + line_height_;
  laid_out_width_ = this->width();
}

double TokenFlowView::shift() const {
  // Following: the newest lines in view, whole ones (a line cut in half at the top reads as noise).
  // Scrolled: the window's first token at the top.
  if (!follows_end_) return 0.0;
  const double lines = std::max(1.0, std::floor((textHeight() - 4) / line_height_));
  return std::max(0.0, content_height_ - lines * line_height_);
}

int TokenFlowView::noteStrip() const {
  return follows_end_ ? 0 : int(QFontMetricsF(note_font(text_font_)).height()) + 4;
}

void TokenFlowView::paintEvent(QPaintEvent*) {
  if (laid_out_width_ != width()) layout();
  QPainter p(this);
  p.fillRect(rect(), background_color());
  const double up = shift();
  const QFontMetricsF fm(text_font_);
  p.setFont(text_font_);
  const bool dark = current_theme() == ThemeKind::Dark;
  p.setClipRect(QRect(0, 0, width(), textHeight()));
  for (const Placed& placed : placed_) {
    const QRectF r = placed.rect.translated(0, -up);
    if (r.bottom() < 0 || r.top() > textHeight()) continue;
    const TokenCell& t = tokens_[placed.token];
    if (t.prompt) p.fillRect(r, dark ? QColor(255, 255, 255, 14) : QColor(0, 0, 0, 12));
    if (t.position == highlight_) p.fillRect(r.adjusted(-1, 0, 1, 0), dark ? QColor(255, 255, 255, 60) : QColor(0, 0, 0, 40));
    QColor c = fate_color(t.fate);
    if (t.prompt && t.fate != Fate::Evicted) c = dark ? c.darker(125) : c.lighter(115);
    p.setPen(c);
    p.drawText(QPointF(r.left(), r.top() + fm.ascent() + 1), placed.text);
    if (t.fate == Fate::Unborn) p.drawLine(QPointF(r.left(), r.bottom() - 1), QPointF(r.right(), r.bottom() - 1));
    if (t.needle) {
      // The planted needle: an amber bar under its tokens, whatever their fate.
      p.fillRect(QRectF(r.left(), r.bottom() - 2.5 * std::max(1.0, ui_scale()), r.width(), 2.5 * std::max(1.0, ui_scale())),
                 QColor(255, 190, 0));
    }
  }
  if (!follows_end_) paintNote(p);
}

// Scrolled back, say so in a strip of its own under the text (it once covered one of two lines).
void TokenFlowView::paintNote(QPainter& p) {
  const bool dark = current_theme() == ThemeKind::Dark;
  const QRect strip(0, textHeight(), width() - bar_->width(), noteStrip());
  p.setClipping(false);
  p.fillRect(strip, dark ? QColor(40, 48, 54) : QColor(235, 239, 242));
  p.setFont(note_font(text_font_));
  p.setPen(muted_text_color());
  p.drawText(strip.adjusted(4, 0, -4, 0), Qt::AlignVCenter | Qt::AlignRight,
             p.fontMetrics().elidedText("scrolled back · scroll to the bottom to follow", Qt::ElideRight, strip.width() - 8));
}

int64_t TokenFlowView::firstVisiblePosition() const {
  const double up = shift();
  for (const Placed& placed : placed_)
    if (placed.rect.translated(0, -up).bottom() > 0) return tokens_[placed.token].first_position;
  return -1;
}

QRect TokenFlowView::cellRect(size_t cell) const {
  for (const Placed& placed : placed_)
    if (placed.token == cell) return placed.rect.translated(0, -shift()).toRect();
  return {};
}

int TokenFlowView::hit(QPointF point) const {
  if (point.y() >= textHeight()) return -1;  // the note's strip
  const double up = shift();
  for (const Placed& placed : placed_)
    if (placed.rect.translated(0, -up).contains(point)) return int(placed.token);
  return -1;
}

void TokenFlowView::mousePressEvent(QMouseEvent* event) {
  const int i = hit(event->position());
  if (i >= 0 && event->button() == Qt::LeftButton) emit tokenClicked(tokens_[size_t(i)].position);
}

void TokenFlowView::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & Qt::ControlModifier) {
    // A zoom step per notch, as a browser's: 15 % larger or smaller.
    const int notches = event->angleDelta().y() / 120;
    if (notches != 0) emit textScaleRequested(text_scale_ * std::pow(1.15, notches));
    event->accept();
    return;
  }
  if (tokens_.empty()) return;
  // About three lines a notch, in positions: the window's tokens per line.
  const double lines = std::max(1.0, content_height_ / line_height_);
  const double per_line = std::max(1.0, double(tokens_.size()) / lines);
  const int64_t step = std::max<int64_t>(1, int64_t(3 * per_line * std::abs(event->angleDelta().y()) / 120));
  const int64_t top = follows_end_ ? std::max<int64_t>(0, firstVisiblePosition()) : tokens_.front().first_position;
  if (event->angleDelta().y() > 0) {
    requestFrom(std::max<int64_t>(0, top - step));
  } else if (!follows_end_) {
    const int64_t next = top + step;
    requestFrom(next >= bar_->maximum() ? -1 : next);
  }
  event->accept();
}

bool TokenFlowView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int i = hit(help->pos());
    if (i < 0) {
      QToolTip::hideText();
    } else {
      const TokenCell& t = tokens_[size_t(i)];
      const QString where = t.first_position == t.position
                                ? QString("position %1").arg(t.position)
                                : QString("positions %1–%2 (one character, %3 byte tokens)")
                                      .arg(t.first_position)
                                      .arg(t.position)
                                      .arg(t.position - t.first_position + 1);
      QToolTip::showText(help->globalPos(), QString("<b>%1</b> · %2<br>%3%4<br><i>click: score history and evictions</i>")
                                                .arg(QString::fromStdString(t.text).toHtmlEscaped())
                                                .arg(where)
                                                .arg(fate_tooltip(t.fate, &policy_))
                                                .arg(QString(t.prompt ? " · prompt" : "") + (t.needle ? " · the needle" : "")),
                         this);
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace h2o::ui
