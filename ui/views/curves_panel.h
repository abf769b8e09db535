#pragma once
// The shared curves under the panes: KV memory against tokens and decode
// throughput against time; in teacher-forced mode perplexity, agreement with
// and KL from the full cache take the throughput's place (nothing decodes
// there). Every plot against tokens marks where the stream passes the model's
// trained context. Every policy in each plot; early spikes do not set the scale.
#include <QWidget>
#include <vector>

#include "core/analysis/snapshot.h"

class QCustomPlot;
class QCPItemStraightLine;
class QCPItemText;
class QStackedWidget;
class QTabWidget;

namespace h2o::ui {

class CurvesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CurvesPanel(QWidget* parent = nullptr);
  void draw(const StudioSnapshot& snapshot);
  QCustomPlot* memory() const { return memory_; }
  QCustomPlot* throughput() const { return throughput_; }
  QCustomPlot* perplexity() const { return perplexity_; }
  QCustomPlot* agreement() const { return agreement_; }
  QCustomPlot* kl() const { return kl_; }
  // The plots that hold this mode's data (what a report exports).
  std::vector<QCustomPlot*> plotsForMode(const std::string& mode) const;
  // The trained context's marker on `plot` (memory, perplexity, agreement, KL): shown, and where.
  bool contextMarkerShown(const QCustomPlot* plot) const;
  bool contextMarkerShown() const { return contextMarkerShown(memory_); }
  double contextMarkerAt(const QCustomPlot* plot) const;
  void restyle();

 private:
  QCustomPlot *memory_, *throughput_, *perplexity_, *agreement_, *kl_;
  QTabWidget* quality_;
  QStackedWidget* second_;
  struct ContextMarker {
    QCustomPlot* plot;
    QCPItemStraightLine* line;
    QCPItemText* label;
  };
  std::vector<ContextMarker> markers_;  // one per plot against tokens
  const ContextMarker* markerOf(const QCustomPlot* plot) const;
  void placeMarkers(const StudioSnapshot& s);
  // A line equal to an earlier one is drawn dashed over it and named "H2O (= StreamingLLM)".
  static void name_coinciding(QCustomPlot* plot, const std::vector<Series>& series);
  std::vector<PolicyConfig> policies_;  // the graphs' policies, in order
};

}  // namespace h2o::ui
