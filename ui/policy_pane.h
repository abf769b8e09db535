#pragma once
// One policy's column: its numbers, sparsity meter, coloured text, attention
// heatmap and survival raster, stacked in a splitter.
#include <QWidget>

#include "core/studio/snapshot.h"

class QLabel;

namespace h2o::ui {

class TokenFlowView;
class HeatmapPlot;
class RasterPlot;
class SparsityMeter;

class PolicyPane : public QWidget {
  Q_OBJECT
 public:
  explicit PolicyPane(const PolicyConfig& policy, QWidget* parent = nullptr);
  const PolicyConfig& policy() const { return policy_; }
  // Draws one snapshot of this policy (shown layer/head given for the captions).
  void draw(const PaneSnapshot& pane, int top_k, const QString& view_caption, int64_t highlight);

  TokenFlowView* text() const { return text_; }
  HeatmapPlot* heatmap() const { return heatmap_; }
  RasterPlot* raster() const { return raster_; }
  SparsityMeter* meter() const { return meter_; }
  QString numbersText() const;

 signals:
  void positionClicked(qint64 position);

 private:
  PolicyConfig policy_;
  QLabel* title_;
  QLabel* numbers_;
  SparsityMeter* meter_;
  TokenFlowView* text_;
  HeatmapPlot* heatmap_;
  RasterPlot* raster_;
  QLabel* heatmap_caption_;
};

}  // namespace h2o::ui
