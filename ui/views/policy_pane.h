#pragma once
// One policy's column: its numbers, sparsity meter, coloured text, attention
// heatmap and the two survival rasters (the whole stream, and a detail),
// in splitters that never squeeze a plot below what it needs. Stacked, every
// plot under the other; wide (a 2x2 grid in a short window), the rasters sit
// beside the heatmap, so a pane needs about half the height. Presenting, the
// text is what the audience reads: it gets the larger share of the pane.
#include <QWidget>

#include "core/analysis/snapshot.h"

class QGridLayout;
class QLabel;
class QSplitter;

namespace h2o::ui {

class TokenFlowView;
class HeatmapPlot;
class RasterPlot;
class SparsityMeter;

class PolicyPane : public QWidget {
  Q_OBJECT
 public:
  enum class Arrangement { Stacked, Wide };
  explicit PolicyPane(const PolicyConfig& policy, QWidget* parent = nullptr);
  void setArrangement(Arrangement arrangement);
  Arrangement arrangement() const { return arrangement_; }
  // The text's share of the pane: emphasised (presenting) the answers get about twice the height.
  void setTextEmphasis(bool on);
  bool textEmphasis() const { return text_emphasis_; }
  // The least size in an arrangement: every plot's cells at their least (see keep_cells_at_least).
  QSize minimumFor(Arrangement arrangement) const;
  const PolicyConfig& policy() const { return policy_; }
  // Draws this policy's part of a snapshot.
  void draw(const StudioSnapshot& snapshot, const PaneSnapshot& pane, int64_t highlight);
  // Before a run's first snapshot: the numbers line says `state` ("loading kjv-1M.bin … 40 %",
  // "no model loaded"), the plots' titles and cells `brief` (default: the same; "loading … 40 %").
  void showIdle(const QString& state, const QString& brief = {});

  TokenFlowView* text() const { return text_; }
  HeatmapPlot* heatmap() const { return heatmap_; }
  RasterPlot* overview() const { return overview_; }
  RasterPlot* raster() const { return detail_; }
  SparsityMeter* meter() const { return meter_; }
  QLabel* titleLabel() const { return title_; }
  QLabel* numbersLabel() const { return numbers_; }
  QString numbersText() const;
  void restyle();

 signals:
  void positionClicked(qint64 position);
  void detailRequested(qint64 first, int count);
  void textScrollRequested(qint64 first);
  // The rasters' cell areas in pixels (overview, detail).
  void rasterPixels(QSize overview, QSize detail);

 private:
  void arrangeHeader();
  void shareHeight();
  void fitNumbers();
  void fitTitle();
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

  PolicyConfig policy_;
  Arrangement arrangement_ = Arrangement::Stacked;
  bool arranged_ = false, text_emphasis_ = false, stack_dragged_ = false;
  QGridLayout* header_;
  QSplitter* stack_;    // text over the plots
  QSplitter* side_;     // wide: the heatmap beside the rasters
  QSplitter* rasters_;  // wide: overview over detail
  // The numbers' line, fullest first: with the stream's length, without it, without the rate too.
  QStringList numbers_forms_;
  QString title_brief_;  // the policy's parameters, after its name (elided to the room left)
  QLabel* title_;
  QLabel* numbers_;
  SparsityMeter* meter_;
  TokenFlowView* text_;
  HeatmapPlot* heatmap_;
  RasterPlot* overview_;
  RasterPlot* detail_;
};

// "layer 1 · mean over 8 heads", "layer 1 · head 3 (KV 1)": how panes and exports name the view.
QString view_caption(const StudioSnapshot& snapshot);

}  // namespace h2o::ui
