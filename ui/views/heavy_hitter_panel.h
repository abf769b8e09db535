#pragma once
// Heavy-hitter analytics, live per policy at the shown layer/head: the
// accumulated scores against their rank on log-log axes with the fitted
// power-law slope, and the attention-sparsity history (share on the top-k keys).
#include <QWidget>
#include <vector>

#include "core/analysis/snapshot.h"

class QCustomPlot;
class QCPGraph;

namespace h2o::ui {

class HeavyHitterPanel : public QWidget {
  Q_OBJECT
 public:
  explicit HeavyHitterPanel(QWidget* parent = nullptr);
  void draw(const StudioSnapshot& snapshot);
  QCustomPlot* scoreRank() const { return score_rank_; }
  QCustomPlot* sparsity() const { return sparsity_; }
  void restyle();  // theme colours and scale: the graphs are made again at the next frame

 private:
  void setPolicies(const std::vector<PolicyConfig>& policies);
  std::vector<PolicyConfig> policies_;  // the graphs' policies, in order
  QCustomPlot *score_rank_, *sparsity_;
  std::vector<QCPGraph*> points_, fits_;
};

}  // namespace h2o::ui
