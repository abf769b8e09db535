#pragma once
// The attention heatmap of one policy: recent query steps (rows) x the cache
// slots they attended (columns, labelled with their characters), titled with
// the policy, layer and head, with its colour scale. Hovering shows token,
// position, probability and accumulated score; clicking a column inspects its
// token; clicking a row's label area picks that query for the head view.
#include <qcustomplot.h>

#include "core/analysis/snapshot.h"
#include "ui/plot/plot_helpers.h"

namespace h2o::ui {

class HeatmapPlot : public QCustomPlot {
  Q_OBJECT
 public:
  static constexpr int kMinCells = 120;  // px: the least height of the cells, any window
  explicit HeatmapPlot(QWidget* parent = nullptr);
  // `title`: what the pane shows (compact: the view and step alone) and the file's (policy, layer, head, step).
  void setData(HeatmapData data, const PlotTitle& title);
  // The planted needle's positions [begin, end) as an amber frame over their columns (-1: none).
  void setNeedle(int64_t begin, int64_t end);
  const HeatmapData& data() const { return data_; }
  QString title() const;          // as shown
  QString exportTitle() const;    // as exported
  // What the cells say where there are none (line-broken to fit), or empty.
  QString shownNote() const { return note_->visible() ? note_->text() : QString(); }
  void restyle();

 signals:
  void positionClicked(qint64 position);

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  // Labels the columns for the width the layout just gave the cells, then
  // lays out again if that width was not the one they were made for.
  void updateLayout() override;

 private:
  bool cellAt(QPointF point, int& row, int& col) const;
  void label();  // the ticks that fit the current size
  int labelled_width_ = -1;  // the cells' width label() last fitted
  int labelExtent() const;
  QString pieceInWord(int col) const;  // the column's token, and its word where that is longer

  QCPColorMap* map_;
  QCPColorScale* scale_;
  QCPTextElement* title_;
  QCPItemText* note_;
  QCPItemRect* needle_;
  QSharedPointer<QCPAxisTickerText> columns_ticker_, rows_ticker_;
  HeatmapData data_;
};

}  // namespace h2o::ui
