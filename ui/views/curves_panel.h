#pragma once
// The shared curves under the panes: KV memory against tokens (with a marker
// where the stream passes the model's trained context) and decode throughput
// against time; in teacher-forced mode perplexity and agreement with the full
// cache take the throughput's place (nothing decodes there). Every policy in
// each plot; early spikes do not set the scale.
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
  bool contextMarkerShown() const;
  void restyle();

 private:
  QCustomPlot *memory_, *throughput_, *perplexity_, *agreement_, *kl_;
  QTabWidget* quality_;
  QStackedWidget* second_;
  QCPItemStraightLine* context_line_;
  QCPItemText* context_label_;
  std::vector<PolicyConfig> policies_;  // the graphs' policies, in order
};

}  // namespace h2o::ui
