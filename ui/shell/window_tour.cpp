#include "ui/shell/window_tour.h"

#include <QEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>

namespace h2o::ui {

namespace {

// The callout's inner margin and its distance from the part, in multiples of the font's height.
constexpr double kPadLines = 0.6, kGapLines = 0.5;

QFont bold(QFont f) {
  f.setBold(true);
  return f;
}

}  // namespace

WindowTour::WindowTour(QWidget* window, std::vector<TourStop> stops) : QWidget(window) {
  for (TourStop& s : stops)
    if (s.part && s.part->isVisible() && !s.part->rect().isEmpty()) stops_.push_back(std::move(s));
  setObjectName("window_tour");
  setFocusPolicy(Qt::StrongFocus);
  setGeometry(window->rect());
  window->installEventFilter(this);
  show();
  raise();
  setFocus();
}

QRect WindowTour::partRect() const {
  if (stops_.empty() || !stop().part) return {};
  const QWidget* part = stop().part;
  return QRect(part->mapTo(parentWidget(), QPoint(0, 0)), part->size()).intersected(rect());
}

QString WindowTour::footer() const {
  return QString("%1 / %2 · → or a click: next · ←: back · Esc: close").arg(current_ + 1).arg(count());
}

QSize WindowTour::calloutSize() const {
  const QFontMetrics fm(font()), title(bold(font()));
  const int pad = int(fm.height() * kPadLines);
  const int width = std::min(fm.averageCharWidth() * 60, std::max(fm.averageCharWidth() * 20, this->width() - 4 * pad));
  const int inner = width - 2 * pad;
  const auto height_of = [&](const QFontMetrics& m, const QString& s) {
    return m.boundingRect(QRect(0, 0, inner, 100000), Qt::TextWordWrap, s).height();
  };
  return {width, 2 * pad + height_of(title, stop().title) + pad / 2 + height_of(fm, stop().text) + pad / 2 +
                     height_of(fm, footer())};
}

// Below the part where it fits, else above, else beside it, else over its top.
QRect WindowTour::calloutFor(const QRect& part, const QSize& box) const {
  const int gap = int(QFontMetrics(font()).height() * kGapLines);
  const auto clamp_x = [&](int x) { return std::clamp(x, gap, std::max(gap, width() - box.width() - gap)); };
  const auto clamp_y = [&](int y) { return std::clamp(y, gap, std::max(gap, height() - box.height() - gap)); };
  if (part.bottom() + gap + box.height() + gap <= height())
    return {QPoint(clamp_x(part.left()), part.bottom() + gap), box};
  if (part.top() - gap - box.height() >= gap) return {QPoint(clamp_x(part.left()), part.top() - gap - box.height()), box};
  if (part.right() + gap + box.width() + gap <= width()) return {QPoint(part.right() + gap, clamp_y(part.top())), box};
  if (part.left() - gap - box.width() >= gap) return {QPoint(part.left() - gap - box.width(), clamp_y(part.top())), box};
  return {QPoint(clamp_x(part.left() + gap), clamp_y(part.top() + gap)), box};
}

QRect WindowTour::calloutRect() const { return stops_.empty() ? QRect() : calloutFor(partRect(), calloutSize()); }

void WindowTour::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  if (stops_.empty()) return;
  const QRect part = partRect(), box = calloutRect();
  // Everything but the part dimmed: the class looks where the outline is.
  QPainterPath dim;
  dim.setFillRule(Qt::OddEvenFill);
  dim.addRect(rect());
  dim.addRect(part);
  p.fillPath(dim, QColor(0, 0, 0, 150));
  const QColor accent = palette().color(QPalette::Highlight);
  p.setPen(QPen(accent, std::max(2.0, QFontMetrics(font()).height() / 8.0)));
  p.setBrush(Qt::NoBrush);
  p.drawRoundedRect(QRectF(part).adjusted(1, 1, -1, -1), 4, 4);

  p.setPen(QPen(accent, 1.5));
  p.setBrush(palette().color(QPalette::Window));
  p.drawRoundedRect(box, 6, 6);
  const QFontMetrics fm(font());
  const int pad = int(fm.height() * kPadLines);
  QRect text = box.adjusted(pad, pad, -pad, -pad);
  p.setPen(palette().color(QPalette::WindowText));
  p.setFont(bold(font()));
  QRect used;
  p.drawText(text, Qt::TextWordWrap, stop().title, &used);
  text.setTop(used.bottom() + pad / 2);
  p.setFont(font());
  p.drawText(text, Qt::TextWordWrap, stop().text, &used);
  text.setTop(used.bottom() + pad / 2);
  p.setPen(palette().color(QPalette::PlaceholderText));
  p.drawText(text, Qt::TextWordWrap, footer());
}

void WindowTour::next() {
  if (current_ + 1 >= count()) return finish();
  ++current_;
  update();
}

void WindowTour::back() {
  current_ = std::max(0, current_ - 1);
  update();
}

void WindowTour::finish() {
  hide();
  emit finished();
  deleteLater();
}

bool WindowTour::event(QEvent* event) {
  // Keys go to the tour, not to the window's shortcuts (Space would play the run behind it).
  if (event->type() == QEvent::ShortcutOverride) {
    event->accept();
    return true;
  }
  return QWidget::event(event);
}

void WindowTour::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Escape: return finish();
    case Qt::Key_Left:
    case Qt::Key_Backspace: return back();
    case Qt::Key_Right:
    case Qt::Key_Space:
    case Qt::Key_Return:
    case Qt::Key_Enter: return next();
    default: event->accept();  // the window's shortcuts wait until the tour is closed
  }
}

void WindowTour::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::RightButton) back();
  else next();
}

bool WindowTour::eventFilter(QObject* watched, QEvent* event) {
  if (watched == parentWidget() && (event->type() == QEvent::Resize || event->type() == QEvent::LayoutRequest)) {
    setGeometry(parentWidget()->rect());
    update();
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace h2o::ui
