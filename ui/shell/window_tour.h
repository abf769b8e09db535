#pragma once
// Help ▸ Overview (F1): a guided first look at the window, drawn over it. Each
// stop outlines one part where it is on screen — the panes, a pane's answer,
// heatmap, rasters and numbers, the timeline, the shared views, the controls,
// the colours' key — and says in a sentence or two what it shows, so that a
// teacher can walk a class through the window before a run. Right, Space or a
// click goes on, Left goes back, Esc (or a click past the last) closes. It
// computes nothing: the parts and their words are the window's.
#include <QPointer>
#include <QString>
#include <QWidget>
#include <vector>

namespace h2o::ui {

struct TourStop {
  QPointer<QWidget> part;  // outlined where it is; a stop whose part is hidden is left out
  QString title;           // "The timeline"
  QString text;            // what it shows, and what to do with it
};

class WindowTour : public QWidget {
  Q_OBJECT
 public:
  // Covers `window` (as its child, following its resizes) and shows the first of the visible `stops`.
  WindowTour(QWidget* window, std::vector<TourStop> stops);

  int count() const { return int(stops_.size()); }
  int current() const { return current_; }
  const TourStop& stop() const { return stops_[size_t(current_)]; }
  // The current part's outline and its words' box, in this widget's coordinates.
  QRect partRect() const;
  QRect calloutRect() const;
  void next();  // past the last stop: closes
  void back();

 signals:
  void finished();

 protected:
  bool event(QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QString footer() const;
  QRect calloutFor(const QRect& part, const QSize& box) const;
  QSize calloutSize() const;
  void finish();

  std::vector<TourStop> stops_;
  int current_ = 0;
};

}  // namespace h2o::ui
