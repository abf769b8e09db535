#pragma once
// The shared curves under the panes: KV memory against tokens and decode
// throughput against time, plus perplexity and agreement with the full cache
// in teacher-forced mode; three policies in each plot.
#include <QWidget>
#include <vector>

#include "core/studio_snapshot.h"

class QCustomPlot;
class QTabWidget;

namespace h2o::ui {

class CurvesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CurvesPanel(const std::vector<PolicyKind>& kinds, QWidget* parent = nullptr);
  void draw(const StudioSnapshot& snapshot);
  QCustomPlot* memory() const { return memory_; }
  QCustomPlot* throughput() const { return throughput_; }
  QCustomPlot* perplexity() const { return perplexity_; }
  QCustomPlot* agreement() const { return agreement_; }

 private:
  QCustomPlot *memory_, *throughput_, *perplexity_, *agreement_;
  QTabWidget* quality_;
};

}  // namespace h2o::ui
