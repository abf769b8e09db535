#include "curves_panel.h"

#include <QHBoxLayout>
#include <QSplitter>
#include <QTabWidget>

#include "ui/plot_helpers.h"

namespace h2o::ui {

CurvesPanel::CurvesPanel(QWidget* parent) : QWidget(parent) {
  memory_ = make_plot("KV memory", "tokens in the stream", "live KV (KiB)");
  throughput_ = make_plot("Decode throughput", "engine time (s)", "tokens/s");
  perplexity_ = make_plot("Perplexity (teacher-forced)", "scored tokens", "running perplexity");
  agreement_ = make_plot("Top-1 agreement with full (teacher-forced)", "scored tokens", "agreement");
  for (QCustomPlot* p : {memory_, throughput_, perplexity_, agreement_}) legend_above(p);
  quality_ = new QTabWidget;
  quality_->addTab(perplexity_, "Perplexity");
  quality_->addTab(agreement_, "Agreement");
  quality_->setToolTip("Filled in teacher-forced mode (choose a text file in the controls)");
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(memory_);
  splitter->addWidget(throughput_);
  splitter->addWidget(quality_);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
}

void CurvesPanel::draw(const StudioSnapshot& s) {
  if (const auto policies = snapshot_policies(s); policies != policies_) {
    policies_ = policies;
    for (QCustomPlot* p : {memory_, throughput_, perplexity_, agreement_}) set_policy_graphs(p, policies_);
  }
  auto fill = [](QCustomPlot* plot, const std::vector<Series>& series, double y_scale) {
    for (int i = 0; i < plot->graphCount() && i < int(series.size()); ++i) {
      Series scaled = series[size_t(i)];
      for (double& y : scaled.y) y *= y_scale;
      set_series(plot->graph(i), scaled);
    }
    rescale(plot);
    if (plot->isVisible()) plot->replot(QCustomPlot::rpImmediateRefresh);
  };
  // Perplexity and agreement exist only when a text is teacher-forced.
  quality_->setVisible(s.mode == "forced");
  fill(memory_, s.kv_bytes, 1.0 / 1024);
  fill(throughput_, s.throughput, 1.0);
  fill(perplexity_, s.perplexity, 1.0);
  fill(agreement_, s.agreement, 1.0);
}

}  // namespace h2o::ui
