#include "ui/shell/transport_bar.h"

#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProxyStyle>
#include <QSlider>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace h2o::ui {
namespace {

// A click on the timeline's groove jumps to that step, as a video player's
// does, instead of moving one page (a twentieth of the run) towards it.
class JumpClickStyle : public QProxyStyle {
 public:
  using QProxyStyle::QProxyStyle;
  int styleHint(StyleHint hint, const QStyleOption* option, const QWidget* widget,
                QStyleHintReturn* data) const override {
    if (hint == QStyle::SH_Slider_AbsoluteSetButtons) return Qt::LeftButton;
    return QProxyStyle::styleHint(hint, option, widget, data);
  }
};

}  // namespace

namespace {
// A flat button for one action, its icon only or (`with_text`) its text beside it.
QToolButton* action_button(QAction* action, bool with_text = false) {
  auto* b = new QToolButton;
  b->setDefaultAction(action);
  b->setToolButtonStyle(with_text ? Qt::ToolButtonTextBesideIcon : Qt::ToolButtonIconOnly);
  b->setAutoRaise(true);
  return b;
}
}  // namespace

TransportBar::TransportBar(QAction* back, QAction* play, QAction* step, QAction* live, const QList<QAction*>& extra,
                           QWidget* parent)
    : QWidget(parent) {
  rows_ = new QVBoxLayout(this);
  rows_->setContentsMargins(4, 1, 4, 1);
  rows_->setSpacing(2);
  // The bar's least width is minimumSizeHint's (the boxes on a second row), not the first row's.
  rows_->setSizeConstraint(QLayout::SetNoConstraint);
  auto* h = first_row_ = new QHBoxLayout;
  second_row_ = new QHBoxLayout;
  for (QHBoxLayout* row : {first_row_, second_row_}) {
    row->setSpacing(4);
    rows_->addLayout(row);
  }
  for (QAction* a : {back, play, step}) h->addWidget(action_button(a));
  addTimeline(h);
  h->addWidget(action_button(live, true));
  addViewControls(h);
  for (QAction* a : extra) h->addWidget(action_button(a));
  extras_ = int(extra.size());
  setReplay(false);
  setShape(1, 1);
  connectControls();
}

void TransportBar::addTimeline(QHBoxLayout* h) {
  slider_ = new QSlider(Qt::Horizontal);
  slider_->setObjectName("timeline");
  slider_->setToolTip("Timeline: drag or click to show any step; every pane, heatmap and plot follows");
  slider_->setMinimumWidth(140);
  slider_->setTracking(false);  // seek when released: each seek reads the recording
  auto* jump = new JumpClickStyle(slider_->style()->name());
  jump->setParent(slider_);
  slider_->setStyle(jump);
  h->addWidget(slider_, 3);
  step_label_ = new QLabel("no run");
  step_label_->setObjectName("timeline_step");
  step_label_->setMinimumWidth(step_label_->fontMetrics().horizontalAdvance("step 00000 · 00000 steps") + 8);
  h->addWidget(step_label_);
}

void TransportBar::addViewControls(QHBoxLayout* h) {
  layer_ = new QComboBox;
  layer_->setObjectName("layer");
  layer_->setToolTip("Layer shown in fates, heatmaps, rasters and scores (the watched layer is captured every step, "
                     "every layer every 8 steps)");
  head_ = new QComboBox;
  head_->setObjectName("head");
  head_->setToolTip("Query head shown (KV head = head / group), or the mean over heads aligned by position");
  speed_ = new QDoubleSpinBox;
  speed_->setObjectName("speed");
  speed_->setDecimals(2);
  speed_->setKeyboardTracking(false);
  h->addWidget(new QLabel("Layer"));
  h->addWidget(layer_);
  h->addWidget(new QLabel("Head"));
  h->addWidget(head_);
  h->addWidget(speed_);
  prompt_ = new QLineEdit;
  prompt_->setObjectName("prompt");
  prompt_->setPlaceholderText("Type a prompt for the live stream, Enter…");
  prompt_->setClearButtonEnabled(true);
  prompt_->setMinimumWidth(160);
  needle_ = new QLineEdit;
  needle_->setObjectName("needle");
  needle_->setPlaceholderText("Plant a needle: “The secret word is Bethlehem.”, Enter…");
  needle_->setClearButtonEnabled(true);
  needle_->setMinimumWidth(120);
  boxes_ = new QWidget;
  auto* b = new QHBoxLayout(boxes_);
  b->setContentsMargins(0, 0, 0, 0);
  b->setSpacing(4);
  b->addWidget(prompt_, 2);
  b->addWidget(needle_, 1);
  h->addWidget(boxes_, 3);
}

bool TransportBar::boxesOnSecondRow() const { return second_row_->indexOf(boxes_) >= 0; }

// The first row without the boxes, or the boxes alone, whichever is wider.
QSize TransportBar::minimumSizeHint() const {
  const QMargins m = rows_->contentsMargins();
  const int boxes = boxes_->minimumSizeHint().width() + first_row_->spacing();
  const int first = first_row_->minimumSize().width() - (boxesOnSecondRow() ? 0 : boxes);
  const int height = first_row_->minimumSize().height() + (boxesOnSecondRow() ? rows_->spacing() + boxes_->minimumSizeHint().height() : 0);
  return {std::max(first, boxes) + m.left() + m.right(), height + m.top() + m.bottom()};
}

void TransportBar::fitBoxes() {
  const QMargins m = rows_->contentsMargins();
  const int boxes = boxes_->minimumSizeHint().width() + first_row_->spacing();
  const int others = first_row_->minimumSize().width() - (boxesOnSecondRow() ? 0 : boxes);
  const bool fits = width() - m.left() - m.right() >= others + boxes;
  if (fits != boxesOnSecondRow()) return;
  if (fits) {
    second_row_->removeWidget(boxes_);
    first_row_->insertWidget(first_row_->count() - extras_, boxes_, 3);
  } else {
    first_row_->removeWidget(boxes_);
    second_row_->addWidget(boxes_);
  }
  updateGeometry();  // another height
}

void TransportBar::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitBoxes();
}

void TransportBar::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::FontChange) return;
  // The step label's room for its longest usual text, in the font it has now (presentation mode's is larger).
  step_label_->setMinimumWidth(step_label_->fontMetrics().horizontalAdvance("step 00000 · 00000 steps") + 8);
  fitBoxes();
}

void TransportBar::connectControls() {
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (!updating_) emit seekRequested(v);
  });
  connect(slider_, &QSlider::sliderMoved, this, [this](int v) { step_label_->setText(QString("step %1 …").arg(v)); });
  const auto view = [this] {
    if (!updating_) emit viewChanged(layer(), head());
  };
  connect(layer_, &QComboBox::currentIndexChanged, this, view);
  connect(head_, &QComboBox::currentIndexChanged, this, view);
  connect(speed_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (!updating_) emit speedChanged(v);
  });
  connect(prompt_, &QLineEdit::returnPressed, this, [this] {
    const QString text = prompt_->text().trimmed();
    if (text.isEmpty()) return;
    emit promptSubmitted(text);
    prompt_->clear();
  });
  connect(needle_, &QLineEdit::returnPressed, this, [this] {
    const QString text = needle_->text().trimmed();
    if (text.isEmpty()) return;
    emit needleSubmitted(text);
    needle_->clear();
  });
}

void TransportBar::setRange(qint64 first, qint64 last, qint64 total) {
  updating_ = true;
  total_ = std::max(total, last + 1);
  slider_->setRange(int(std::max<qint64>(0, first)), int(std::max<qint64>(first, total_ - 1)));
  slider_->setPageStep(std::max(1, int((total_ - first) / 20)));
  slider_->setEnabled(last >= first);
  updating_ = false;
}

void TransportBar::setStep(qint64 step, bool following) {
  updating_ = true;
  if (!slider_->isSliderDown()) slider_->setValue(int(std::max<qint64>(0, step)));
  updating_ = false;
  if (step < 0) step_label_->setText("no steps yet");
  // Steps are numbered from 0 (as the heatmap's and the inspector's "step N"); the count beside it
  // is the rasters' "N steps", so the newest of 700 reads "step 699 · 700 steps", never "699 / 699".
  else step_label_->setText(QString("step %1 · %2 steps%3").arg(step).arg(std::max<qint64>(0, total_)).arg(following ? "" : " ⏸"));
  step_label_->setToolTip(QString(following ? "showing the newest step" : "showing an earlier step: Live returns to the newest") +
                          " (steps are numbered from 0)");
}

void TransportBar::setShape(int layers, int heads) {
  updating_ = true;
  const int layer = std::max(0, layer_->currentIndex()), head = head_->currentIndex();
  layer_->clear();
  for (int l = 0; l < layers; ++l) layer_->addItem(QString("%1").arg(l));
  head_->clear();
  head_->addItem("mean");
  for (int h = 0; h < heads; ++h) head_->addItem(QString("%1").arg(h));
  layer_->setCurrentIndex(std::min(layer, layers - 1));
  head_->setCurrentIndex(head >= 0 && head < head_->count() ? head : 0);
  updating_ = false;
}

void TransportBar::setView(int layer, int head) {
  updating_ = true;
  if (layer >= layer_->count()) setShape(layer + 1, std::max(1, head_->count() - 1));
  if (head + 1 >= head_->count()) setShape(layer_->count(), head + 1);
  updating_ = true;
  layer_->setCurrentIndex(std::max(0, layer));
  head_->setCurrentIndex(std::max(0, head + 1));
  updating_ = false;
}

int TransportBar::layer() const { return std::max(0, layer_->currentIndex()); }
int TransportBar::head() const { return head_->currentIndex() - 1; }

void TransportBar::setReplay(bool replay) {
  updating_ = true;
  replay_ = replay;
  if (replay) {
    speed_->setRange(0, 64);
    speed_->setSingleStep(0.25);
    speed_->setSpecialValueText("max pace");
    speed_->setSuffix(" × pace");
    speed_->setToolTip("Replay speed: times the recorded pace (1: as it was recorded; max: as fast as it reads)");
  } else {
    speed_->setRange(0, 1000);
    speed_->setSingleStep(1);
    speed_->setSpecialValueText("unlimited");
    speed_->setSuffix(" steps/s");
    speed_->setToolTip("Speed limit of the live run (unlimited: as fast as the engine goes)");
  }
  updating_ = false;
}

void TransportBar::setSpeed(double value) {
  updating_ = true;
  speed_->setValue(value);
  updating_ = false;
}

double TransportBar::speed() const { return speed_->value(); }

void TransportBar::setPromptEnabled(bool enabled, const QString& why) {
  prompt_->setEnabled(enabled);
  prompt_->setToolTip(enabled ? "Typed prompts join the stream when the current turn ends (before the next MT-Bench turn)"
                              : why);
  needle_->setEnabled(enabled);
  needle_->setToolTip(enabled ? "A sentence put into every pane's stream as it is, when the current turn ends; the "
                                "Needle tab then shows which heads still hold it, and Ask (K) has every pane answer "
                                "for it. “The X is Y” is asked back as “What is the X? The X is” → “Y”."
                              : why);
}

}  // namespace h2o::ui
