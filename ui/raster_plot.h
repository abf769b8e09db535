#pragma once
// The survival raster of one policy: stream positions (x) over the latest
// steps (y, newest at the bottom), each cell coloured by the position's fate
// at that step — who is still cached, and in which role.
#include <qcustomplot.h>

#include "core/studio/analytics.h"

namespace h2o::ui {

class RasterPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit RasterPlot(QWidget* parent = nullptr);
  void setData(const SurvivalRaster& raster);
  int cellCount() const { return cells_; }

 signals:
  void positionClicked(qint64 position);

 protected:
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QCPColorMap* map_;
  int cells_ = 0;
};

}  // namespace h2o::ui
