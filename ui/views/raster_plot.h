#pragma once
// A survival raster of one policy: stream positions (x) over steps (y, the
// newest at the bottom), each cell coloured by the fate its positions held
// then. Two of them per pane: the overview of the whole stream (click to move
// the detail there) and the detail, a stretch of positions since the first of
// them was fed (wheel: zoom, drag: scroll, double-click: follow the end again,
// click: inspect the token). Binned cells show the most telling fate they
// hold, so sinks and heavy hitters stay visible at any zoom (core/analysis/survival.h).
#include <qcustomplot.h>

#include "core/analysis/survival.h"
#include "ui/plot/plot_helpers.h"

namespace h2o::ui {

class RasterPlot : public QCustomPlot {
  Q_OBJECT
 public:
  enum class Role { Overview, Detail };
  static constexpr int kMinCells = 60;  // px: the least height of the cells, any window
  explicit RasterPlot(Role role, QWidget* parent = nullptr);
  // `title`: policy, layer/head and what is shown; `marked_first/end`: the
  // detail's stretch (overview only, -1: none); `context`: a marker at this
  // position (0: none).
  void setData(const SurvivalRaster& raster, const PlotTitle& title, int64_t marked_first = -1,
               int64_t marked_end = -1, int64_t context = 0);
  // The planted needle's positions [begin, end) as a band over every step (-1: none); at
  // least 3 px wide, so that it shows in a whole stream of 100,000 positions as the sinks do.
  void setNeedle(int64_t begin, int64_t end);
  QString title() const;
  QString exportTitle() const;
  const SurvivalRaster& raster() const { return raster_; }
  int cellCount() const { return int(raster_.cells.size()); }
  // The pixel of a cell's centre (tests).
  QPoint cellPixel(int row, int col) const;
  // Re-reads the theme's colours.
  void restyle();

 signals:
  void positionClicked(qint64 position);
  // Overview: centre the detail on this position. Detail: show `count` positions from `first` (-1: follow the end).
  void detailRequested(qint64 first, int count);
  // The cells' area in pixels: the most cells that can each be seen.
  void pixelsChanged(int width, int height);

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void buildLegend();
  double columnCoord(int64_t position) const;  // x coordinate (columns) of a position
  int64_t positionAt(double x) const;          // the position under an x coordinate
  Role role_;
  QCPColorMap* map_;
  QSharedPointer<QCPAxisTickerText> ticker_;
  QCPTextElement* title_;
  QCPItemStraightLine *mark_first_, *mark_end_;  // the detail's stretch: two edges, never over a row of cells
  QCPItemStraightLine* context_line_;
  QCPItemRect* needle_band_;
  QCPItemText* context_label_;
  QCPItemText* mark_label_;  // says what the dashed edges are: the stretch the detail below shows
  QCPLayoutGrid* legend_row_ = nullptr;
  SurvivalRaster raster_;
  QPointF press_;
  double press_first_ = 0;
  bool dragging_ = false;
};

}  // namespace h2o::ui
