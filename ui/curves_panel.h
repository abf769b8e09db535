#pragma once
// The shared curves under the panes: KV memory against tokens and decode
// throughput against time, plus perplexity and agreement with the full cache
// in teacher-forced mode; every policy shown in each plot.
#include <QWidget>
#include <vector>

#include "core/studio/snapshot.h"

class QCustomPlot;
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

 private:
  QCustomPlot *memory_, *throughput_, *perplexity_, *agreement_;
  QTabWidget* quality_;
  std::vector<PolicyConfig> policies_;  // the graphs' policies, in order
};

}  // namespace h2o::ui
