#pragma once
// The needle view (docs/STUDIO.md, "The needle"): what each pane still holds
// of the planted needle, in words ("StreamingLLM dropped the needle at step
// 812, 610 tokens after it"), as a layer x KV-head grid per pane, as a
// survival curve over the steps since it was fed, and every ask's recall
// against the tokens since the needle. It draws a NeedleSnapshot; nothing here computes.
#include <QWidget>
#include <vector>

#include "core/analysis/snapshot.h"

class QCustomPlot;
class QLabel;

namespace h2o::ui {

class NeedleGrids;

class NeedleView : public QWidget {
  Q_OBJECT
 public:
  explicit NeedleView(QWidget* parent = nullptr);
  void draw(const StudioSnapshot& snapshot);
  QCustomPlot* survival() const { return survival_; }
  QCustomPlot* recall() const { return recall_; }
  QLabel* summary() const { return summary_; }
  void restyle();

 private:
  void setPolicies(const std::vector<PolicyConfig>& policies);
  std::vector<PolicyConfig> policies_;
  QLabel* summary_;
  NeedleGrids* grids_;
  QCustomPlot *survival_, *recall_;
};

// needle_words and ask_words (core/analysis/needle_watch.h) as the summary's rich text.
QString needle_sentence(const PolicyConfig& policy, const NeedlePane& pane, int kv_heads);
QString ask_sentence(const NeedlePane& pane);

}  // namespace h2o::ui
