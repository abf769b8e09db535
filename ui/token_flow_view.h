#pragma once
// The streaming text of one policy: every token coloured by its fate, the
// newest at the bottom. Prompt tokens sit on a faint band so answers stand
// out. Clicking a token asks for its inspection.
#include <QHash>
#include <QWidget>
#include <vector>

#include "core/studio/snapshot.h"

namespace h2o::ui {

class TokenFlowView : public QWidget {
  Q_OBJECT
 public:
  explicit TokenFlowView(QWidget* parent = nullptr);
  void setTokens(std::vector<TokenCell> tokens);
  void setHighlight(int64_t position);
  void setPolicy(const PolicyConfig& policy) { policy_ = policy; }  // names the fates in tooltips
  int tokenCount() const { return int(tokens_.size()); }
  QSize sizeHint() const override { return {420, 220}; }

 signals:
  void tokenClicked(qint64 position);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;  // tooltips
  void resizeEvent(QResizeEvent*) override { laid_out_width_ = -1; }

 private:
  struct Placed {
    QRectF rect;
    size_t token;
    QString text;
  };
  void layout();
  int hit(QPointF point) const;
  // Text width, remembered per piece: the same few thousand pieces come back
  // every frame, and measuring them was most of this view's drawing time.
  double advance(const QString& piece);

  std::vector<TokenCell> tokens_;
  std::vector<Placed> placed_;
  double content_height_ = 0;
  int laid_out_width_ = -1;
  int64_t highlight_ = -1;
  PolicyConfig policy_;
  QHash<QString, double> advance_;
};

}  // namespace h2o::ui
