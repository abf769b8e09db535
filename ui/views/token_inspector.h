#pragma once
// The clicked token: its accumulated score over time in each policy (one line
// per KV head of the captured layer) and when each policy evicted it, per
// layer and KV head. Until a token is clicked it follows the top heavy hitter
// (of the first policy that keeps tokens by accumulated score: H2O).
#include <QWidget>
#include <vector>

#include "core/analysis/snapshot.h"

class QCustomPlot;
class QCPTextElement;
class QLabel;

namespace h2o::ui {

class TokenInspector : public QWidget {
  Q_OBJECT
 public:
  explicit TokenInspector(QWidget* parent = nullptr);
  void draw(const InspectionSnapshot& inspection);
  QCustomPlot* plot() const { return plot_; }
  QString detailsText() const;
  void restyle();

 signals:
  void followRequested();  // back to following the top heavy hitter

 private:
  QCustomPlot* plot_;
  QCPTextElement* title_;  // names the token and layer, in the window and in a file
  QLabel* details_;
  QWidget* follow_;
};

}  // namespace h2o::ui
