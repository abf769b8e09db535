#pragma once
// The live attention heatmap of one policy: recent query steps (rows) x the
// cache slots they attended (columns, labelled with their tokens). Hovering
// shows token, position, probability and accumulated score; clicking a column
// inspects its token.
#include <qcustomplot.h>

#include "core/studio/snapshot.h"

namespace h2o::ui {

class HeatmapPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit HeatmapPlot(QWidget* parent = nullptr);
  void setData(HeatmapData data);
  const HeatmapData& data() const { return data_; }

 signals:
  void positionClicked(qint64 position);

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  bool cellAt(QPointF point, int& row, int& col) const;

  QCPColorMap* map_;
  QSharedPointer<QCPAxisTickerText> columns_ticker_, rows_ticker_;
  HeatmapData data_;
};

}  // namespace h2o::ui
