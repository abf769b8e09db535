#pragma once
// Heavy-hitter analytics, live per policy at the shown layer/head: the
// accumulated scores against their rank on log-log axes with the fitted
// power-law slope, and the attention-sparsity history (share on the top-k keys).
#include <QWidget>
#include <vector>

#include "core/studio_snapshot.h"

class QCustomPlot;
class QCPGraph;

namespace h2o::ui {

class HeavyHitterPanel : public QWidget {
  Q_OBJECT
 public:
  explicit HeavyHitterPanel(const std::vector<PolicyKind>& kinds, QWidget* parent = nullptr);
  void draw(const StudioSnapshot& snapshot);
  QCustomPlot* scoreRank() const { return score_rank_; }
  QCustomPlot* sparsity() const { return sparsity_; }

 private:
  std::vector<PolicyKind> kinds_;
  QCustomPlot *score_rank_, *sparsity_;
  std::vector<QCPGraph*> points_, fits_;
};

}  // namespace h2o::ui
