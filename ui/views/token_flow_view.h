#pragma once
// The streaming text of one policy: every character coloured by the fate of
// its token (the last of its byte tokens), prompt tokens on a faint band so
// answers stand out. It follows the end of the stream, newest at the bottom,
// until the user scrolls up (wheel or bar): then it shows the stream from the
// position scrolled to, through the whole history, and asks for that window
// (scrollRequested); scrolling back to the bottom follows the end again.
// Clicking a token asks for its inspection.
#include <QHash>
#include <QWidget>
#include <vector>

#include "core/analysis/snapshot.h"

class QScrollBar;

namespace h2o::ui {

class TokenFlowView : public QWidget {
  Q_OBJECT
 public:
  explicit TokenFlowView(QWidget* parent = nullptr);
  // The window of cells, whether it ends at the stream's end, and the stream's length (for the bar).
  void setTokens(std::vector<TokenCell> tokens, bool follows_end, int64_t stream_length);
  void setHighlight(int64_t position);
  void setPolicy(const PolicyConfig& policy) { policy_ = policy; }  // names the fates in tooltips
  int tokenCount() const { return int(tokens_.size()); }
  const std::vector<TokenCell>& tokens() const { return tokens_; }
  bool followsEnd() const { return follows_end_; }
  QScrollBar* scrollBar() const { return bar_; }
  // The first position drawn at the top, and the pixel rectangle of a cell (tests).
  int64_t firstVisiblePosition() const;
  QRect cellRect(size_t cell) const;
  void restyle();
  QSize sizeHint() const override { return {420, 200}; }

 signals:
  void tokenClicked(qint64 position);
  void scrollRequested(qint64 first_position);  // -1: follow the end

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  bool event(QEvent* event) override;  // tooltips
  void resizeEvent(QResizeEvent*) override;

 private:
  struct Placed {
    QRectF rect;
    size_t token;
    QString text;
  };
  void layout();
  double shift() const;  // pixels the content is moved up
  int hit(QPointF point) const;
  // Text width, remembered per piece: the same few thousand pieces come back
  // every frame, and measuring them was most of this view's drawing time.
  double advance(const QString& piece);
  void requestFrom(int64_t first);

  std::vector<TokenCell> tokens_;
  std::vector<Placed> placed_;
  double content_height_ = 0, line_height_ = 12;
  int laid_out_width_ = -1;
  QFont laid_out_font_;  // the font the widths below were measured in (F11 changes it after restyle)
  int64_t highlight_ = -1, stream_length_ = 0;
  bool follows_end_ = true, updating_bar_ = false;
  PolicyConfig policy_;
  QHash<QString, double> advance_;
  QScrollBar* bar_;
};

}  // namespace h2o::ui
