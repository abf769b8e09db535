#include "ui/views/heavy_hitter_panel.h"

#include <QSplitter>
#include <QVBoxLayout>

#include "ui/plot/plot_helpers.h"
#include "ui/plot/theme.h"

namespace h2o::ui {

HeavyHitterPanel::HeavyHitterPanel(QWidget* parent) : QWidget(parent) {
  score_rank_ = make_plot("Score vs rank (log-log; legend: fitted slope)", "rank", "accumulated score");
  QSharedPointer<QCPAxisTickerLog> log_ticker(new QCPAxisTickerLog);
  for (QCPAxis* axis : {score_rank_->xAxis, score_rank_->yAxis}) {
    axis->setScaleType(QCPAxis::stLogarithmic);
    axis->setTicker(log_ticker);
    axis->setNumberFormat("eb");
    axis->setNumberPrecision(0);
  }
  legend_above(score_rank_);

  sparsity_ = make_plot("Attention sparsity (mean per stretch of steps)", "step", "share on top-k keys");
  legend_above(sparsity_);

  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(score_rank_);
  split->addWidget(sparsity_);
  split->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);
  setMinimumWidth(200);  // not the legend's width: the window fits 1280 pixels
}

void HeavyHitterPanel::restyle() {
  for (QCustomPlot* p : {score_rank_, sparsity_}) {
    style_plot(p);
    p->legend->setBrush(Qt::NoBrush);
    p->legend->setBorderPen(Qt::NoPen);
  }
  policies_.clear();
}

// Two graphs per policy in the score plot: its points, and the fitted line.
void HeavyHitterPanel::setPolicies(const std::vector<PolicyConfig>& policies) {
  policies_ = policies;
  score_rank_->clearGraphs();
  points_.clear();
  fits_.clear();
  for (const PolicyConfig& policy : policies) {
    QCPGraph* points = score_rank_->addGraph();
    points->setLineStyle(QCPGraph::lsNone);
    points->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, policy_color(policy), 3.5 * std::max(1.0, ui_scale())));
    points->setPen(QPen(policy_color(policy)));
    points->setName(short_policy_title(policy));
    QCPGraph* fit = score_rank_->addGraph();
    QPen pen(policy_color(policy), 1.4 * std::max(1.0, ui_scale()), Qt::DashLine);
    fit->setPen(pen);
    fit->removeFromLegend();
    points_.push_back(points);
    fits_.push_back(fit);
  }
  set_policy_graphs(sparsity_, policies);
  fit_legend(score_rank_);
}

void HeavyHitterPanel::draw(const StudioSnapshot& s) {
  if (const auto policies = snapshot_policies(s); policies != policies_) setPolicies(policies);
  for (size_t i = 0; i < points_.size() && i < s.panes.size(); ++i) {
    const ScoreRank& sr = s.panes[i].score_rank;
    set_series(points_[i], {sr.rank, sr.score});
    const PowerLawFit& fit = sr.fit;
    if (!std::isnan(fit.slope) && !sr.fit_rank.empty()) {
      set_series(fits_[i], {sr.fit_rank, sr.fit_score});
      points_[i]->setName(QString("%1 %2").arg(short_policy_title(policies_[i])).arg(fit.slope, 0, 'f', 2).replace('-', QChar(0x2212)));
    } else {
      fits_[i]->data()->clear();
      points_[i]->setName(short_policy_title(policies_[i]));
    }
  }
  rescale(score_rank_, false);
  if (score_rank_->isVisible()) score_rank_->replot(QCustomPlot::rpQueuedRefresh);
  for (int i = 0; i < sparsity_->graphCount() && i < int(s.panes.size()); ++i)
    set_series(sparsity_->graph(i), s.panes[size_t(i)].sparsity_history);
  rescale(sparsity_);
  sparsity_->yAxis->setRange(0, 1.05);
  thin_ticks(sparsity_);
  sparsity_->yAxis->setLabel(QString("share on top-%1 keys").arg(s.top_k));
  if (sparsity_->isVisible()) sparsity_->replot(QCustomPlot::rpQueuedRefresh);
}

}  // namespace h2o::ui
