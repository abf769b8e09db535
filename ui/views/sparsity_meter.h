#pragma once
// A bar showing how concentrated the latest step's attention is: the share of
// its mass on the top-k keys (1.0 = all of it on k keys).
#include <QWidget>
#include <cmath>

namespace h2o::ui {

class SparsityMeter : public QWidget {
  Q_OBJECT
 public:
  explicit SparsityMeter(QWidget* parent = nullptr);
  void setValue(double share, int top_k, const QColor& color);
  double value() const { return share_; }
  // As wide as its longest words (a wide pane's header gives the title the rest).
  QSize sizeHint() const override;

 protected:
  QFont labelFont() const;
  QString label() const;
  void paintEvent(QPaintEvent*) override;

 private:
  double share_ = NAN;
  int top_k_ = 8;
  QColor color_;
};

}  // namespace h2o::ui
