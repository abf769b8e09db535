#pragma once
// bertviz's head view on the recorded attention: for the shown layer and head
// (or the mean over heads), one query token on the left of each policy's
// block and the keys it attended on the right, a line to each whose
// strength is its weight; key texts are coloured by their fate, so a
// policy's sinks, heavy hitters and recent tokens show where the query looks.
// The query is the shown step's, or an earlier step's: the buttons at the
// bottom (and Left / Right / End) walk the queries one step at a time.
#include <QWidget>

#include "core/analysis/snapshot.h"

class QToolButton;

namespace h2o::ui {

class HeadView : public QWidget {
  Q_OBJECT
 public:
  explicit HeadView(QWidget* parent = nullptr);
  void setData(const HeadViewData& data);
  const HeadViewData& data() const { return data_; }
  // The line drawn to key k of policy block p, as two points (tests).
  QLineF lineTo(size_t pane, size_t key) const;
  // Where key k of policy block p is written (null: not drawn, no line of text left for it).
  QRectF keyBox(size_t pane, size_t key) const;
  // An attention weight with two significant digits ("0.0041", "0.13").
  static QString weightText(double weight);
  QSize sizeHint() const override { return {600, 260}; }
  QSize minimumSizeHint() const override { return {240, 100}; }

 signals:
  void positionClicked(qint64 position, int pane);  // pane: whose stream the key is in
  // The query of this step (-1: the shown step's, following it).
  void queryStepRequested(qint64 step);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Geometry {
    QRectF block, query;
    std::vector<QRectF> keys;
  };
  std::vector<Geometry> layout() const;
  int barHeight() const;
  HeadViewData data_;
  bool pinned_ = false;  // a query other than the shown step's was asked for
  QToolButton *earlier_, *later_, *newest_;
};

}  // namespace h2o::ui
