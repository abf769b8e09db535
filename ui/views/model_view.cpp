#include "ui/views/model_view.h"

#include <QComboBox>
#include <cmath>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "ui/plot/theme.h"

namespace h2o::ui {

// The grid itself: painted thumbnails, one per (layer, head).
class ModelThumbnails : public QWidget {
 public:
  // A thumbnail's least height: Llama-2-7B's 32 layers in a 1080p window's analysis strip were 3 px
  // dashes under labels drawn over each other; below this the grid scrolls instead (as bertviz's page does).
  static constexpr int kMinThumbnail = 14;

  explicit ModelThumbnails(ModelView* owner) : QWidget(owner), owner_(owner) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(160, 70);
    setCursor(Qt::PointingHandCursor);
  }
  ModelViewData data;
  int shown_layer = -1, shown_head = -1;

  // The least height for `layers` rows of thumbnails under the heads' labels.
  void fitLayers(int layers) {
    const int least = int(std::ceil(labelHeight())) + std::max(1, layers) * kMinThumbnail;
    if (minimumHeight() != std::max(70, least)) setMinimumHeight(std::max(70, least));
  }

  QRectF cell(int layer, int head) const {
    const QFontMetricsF fm(font());
    const double label_w = fm.horizontalAdvance("L00") + 6, label_h = labelHeight();
    const int L = std::max(1, data.layers), H = std::max(1, data.heads);
    const double w = (width() - label_w) / H, h = (height() - label_h) / L;
    return QRectF(label_w + head * w + 1, label_h + layer * h + 1, w - 2, h - 2);
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), background_color());
    const QFontMetricsF fm(font());
    if (data.cells.empty()) {
      p.setPen(muted_text_color());
      p.drawText(rect(), Qt::AlignCenter, "No attention recorded at this step yet.");
      return;
    }
    QCPColorGradient gradient = attention_gradient();
    p.setPen(muted_text_color());
    // Every head and layer named where their labels fit side by side, else every 2nd, 4th, 8th …
    const int head_step = labelStep(fm.horizontalAdvance(QString("H%1").arg(data.heads - 1)) + 4, cell(0, 0).width() + 2);
    const int layer_step = labelStep(fm.height(), cell(0, 0).height() + 2);
    for (int h = 0; h < data.heads; h += head_step) {
      const QRectF c = cell(0, h);
      const double room = (c.width() + 2) * head_step;
      p.drawText(QRectF(c.center().x() - room / 2, 0, room, labelHeight()), Qt::AlignCenter, QString("H%1").arg(h));
    }
    for (int l = 0; l < data.layers; l += layer_step) {
      const QRectF c = cell(l, 0);
      const double room = std::max(c.height(), fm.height());
      p.drawText(QRectF(0, c.center().y() - room / 2, c.left() - 3, room), Qt::AlignRight | Qt::AlignVCenter, QString("L%1").arg(l));
    }
    for (const ModelViewCell& m : data.cells) {
      const QRectF r = cell(m.layer, m.head);
      if (m.rows == 0 || m.cols == 0) {
        p.fillRect(r, grid_color());
        continue;
      }
      QImage image(m.cols, m.rows, QImage::Format_RGB32);
      for (int row = 0; row < m.rows; ++row)
        for (int col = 0; col < m.cols; ++col) {
          const float v = m.values[size_t(row) * size_t(m.cols) + size_t(col)];
          image.setPixel(col, row, gradient.color(std::isnan(v) ? NAN : v, QCPRange(0, m.top > 0 ? m.top : 1)));
        }
      p.drawImage(r, image);
      if (m.layer == shown_layer && (m.head == shown_head || shown_head < 0)) {
        p.setPen(QPen(text_color(), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r.adjusted(-1, -1, 1, 1));
      }
    }
  }
  double labelHeight() const { return QFontMetricsF(font()).height() + 2; }
  // The fewest labels skipped (1, 2, 4, 8 …) so that labels `extent` long stand in cells `pitch` apart.
  static int labelStep(double extent, double pitch) {
    int step = 1;
    while (step < 1024 && step * pitch < extent) step *= 2;
    return step;
  }

  void mousePressEvent(QMouseEvent* event) override {
    for (int l = 0; l < data.layers; ++l)
      for (int h = 0; h < data.heads; ++h)
        if (cell(l, h).contains(event->position())) emit owner_->cellClicked(l, h);
  }

 private:
  ModelView* owner_;
};

ModelView::ModelView(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(2, 2, 2, 2);
  v->setSpacing(2);
  auto* top = new QHBoxLayout;
  policy_ = new QComboBox;
  policy_->setObjectName("model_view_policy");
  policy_->setToolTip("The policy whose attention the model view shows");
  caption_ = new QLabel;
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  top->addWidget(policy_);
  top->addWidget(caption_, 1);
  v->addLayout(top);
  grid_ = new ModelThumbnails(this);
  scroll_ = new QScrollArea;
  scroll_->setObjectName("model_view_scroll");
  scroll_->setWidget(grid_);
  scroll_->setWidgetResizable(true);  // the grid takes the width, and the height where it has it
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll_->setFrameShape(QFrame::NoFrame);
  v->addWidget(scroll_, 1);
  setToolTip("Model view: every layer × head at the shown step (rows: recent captured queries, columns: their keys).\n"
             "Click a thumbnail to show that layer and head in the panes.");
  connect(policy_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!updating_ && i >= 0) emit policyChosen(i);
  });
}

const ModelViewData& ModelView::data() const { return grid_->data; }

void ModelView::setData(const ModelViewData& data, const std::vector<PolicyConfig>& policies, int shown_layer, int shown_head) {
  updating_ = true;
  if (policy_->count() != int(policies.size())) {
    policy_->clear();
    for (const PolicyConfig& p : policies) policy_->addItem(policy_title(p));
  }
  if (data.policy >= 0 && data.policy < policy_->count()) policy_->setCurrentIndex(data.policy);
  updating_ = false;
  caption_->setText(QString(" every layer × head · rows: recent captured queries · click one to show it"));
  grid_->data = data;
  grid_->fitLayers(data.layers);
  grid_->shown_layer = shown_layer;
  grid_->shown_head = shown_head;
  grid_->update();
}

QWidget* ModelView::thumbnails() const { return grid_; }

QPoint ModelView::thumbnailCenter(int layer, int head) const { return grid_->cell(layer, head).center().toPoint(); }

}  // namespace h2o::ui
