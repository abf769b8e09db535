#pragma once
// The streaming text of one policy: every character coloured by the fate of
// its token (the last of its byte tokens), prompt tokens on a faint band so
// answers stand out. It follows the end of the stream, newest at the bottom,
// until the user scrolls up (wheel or bar): then it shows the stream from the
// position scrolled to, through the whole history, and asks for that window
// (scrollRequested); scrolling back to the bottom follows the end again, and
// a strip of its own under the text says so meanwhile. Clicking a token asks
// for its inspection; Ctrl+wheel asks for larger or smaller text (the window
// sizes every pane's text alike, so the panes stay comparable).
#include <QFont>
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
  // The text's size against the app's scale (1: the panes' normal size); presentation mode and
  // Ctrl+wheel set it, within kLeastTextScale..kMostTextScale.
  void setTextScale(double scale);
  double textScale() const { return text_scale_; }
  const QFont& textFont() const { return text_font_; }
  // The answers' font at `scale` times the app's (its --ui-scale) size: also what a pane's width is measured in.
  static QFont textFontAt(double scale);
  static constexpr double kLeastTextScale = 0.75, kMostTextScale = 4.0;
  QSize sizeHint() const override { return {420, 200}; }

 signals:
  void tokenClicked(qint64 position);
  void scrollRequested(qint64 first_position);  // -1: follow the end
  void textScaleRequested(double scale);         // Ctrl+wheel: a step larger or smaller

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
  void fitFont();
  double shift() const;  // pixels the content is moved up
  // The "scrolled back" strip's height under the text (0 while following) and the text's height above it.
  int noteStrip() const;
  int textHeight() const { return height() - noteStrip(); }
  void paintNote(QPainter& p);
  int hit(QPointF point) const;
  // Text width, remembered per piece: the same few thousand pieces come back
  // every frame, and measuring them was most of this view's drawing time.
  double advance(const QString& piece);
  void requestFrom(int64_t first);

  std::vector<TokenCell> tokens_;
  std::vector<Placed> placed_;
  double content_height_ = 0, line_height_ = 12, text_scale_ = 1.0;
  int laid_out_width_ = -1;
  QFont text_font_;  // set by fitFont: the app's scale times text_scale_, or less to fit two lines
  int64_t highlight_ = -1, stream_length_ = 0;
  bool follows_end_ = true, updating_bar_ = false;
  PolicyConfig policy_;
  QHash<QString, double> advance_;
  QScrollBar* bar_;
};

}  // namespace h2o::ui
