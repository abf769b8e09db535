#include "ui/views/curves_panel.h"

#include <QHBoxLayout>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <algorithm>
#include <cmath>

#include "ui/plot/plot_helpers.h"
#include "ui/plot/theme.h"

namespace h2o::ui {

namespace {

struct MemoryUnit {
  double per_byte;
  const char* name;
};

// The memory axis in the unit its largest value reads best in: the demo's
// caches in KiB, a 7B model's in MiB (not "1.25·10⁶ KiB"), beyond 4 GiB in GiB.
MemoryUnit memory_unit(const std::vector<Series>& bytes) {
  double most = 0;
  for (const Series& series : bytes)
    for (double y : series.y) most = std::max(most, y);
  if (most >= 4.0 * (1 << 30)) return {1.0 / (1 << 30), "GiB"};
  if (most >= 4.0 * (1 << 20)) return {1.0 / (1 << 20), "MiB"};
  return {1.0 / 1024, "KiB"};
}

}  // namespace

CurvesPanel::CurvesPanel(QWidget* parent) : QWidget(parent) {
  memory_ = make_plot("KV memory", "tokens in the stream", "live KV (KiB)");
  throughput_ = make_plot("Decode throughput", "engine time (s)", "tokens/s");
  perplexity_ = make_plot("Perplexity (teacher-forced)", "scored tokens", "running perplexity");
  agreement_ = make_plot("Top-1 agreement with full", "scored tokens", "agreement");
  kl_ = make_plot("Mean KL from full (teacher-forced)", "scored tokens", "KL (nats)");
  for (QCustomPlot* p : {memory_, throughput_, perplexity_, agreement_, kl_}) legend_above(p);
  for (QCustomPlot* p : {memory_, perplexity_, agreement_, kl_}) {
    ContextMarker m{p, new QCPItemStraightLine(p), new QCPItemText(p)};
    m.label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m.label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m.line->setVisible(false);
    m.label->setVisible(false);
    markers_.push_back(m);
  }
  quality_ = new QTabWidget;
  quality_->setDocumentMode(true);
  quality_->addTab(perplexity_, "Perplexity");
  quality_->addTab(agreement_, "Agreement");
  quality_->addTab(kl_, "KL");
  // Stream mode decodes (throughput); forced mode scores (perplexity, agreement): one or the other.
  second_ = new QStackedWidget;
  second_->addWidget(throughput_);
  second_->addWidget(quality_);
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(memory_);
  splitter->addWidget(second_);
  splitter->setChildrenCollapsible(false);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
  restyle();
}

void CurvesPanel::restyle() {
  for (QCustomPlot* p : {memory_, throughput_, perplexity_, agreement_, kl_}) {
    style_plot(p);
    p->legend->setBrush(Qt::NoBrush);
    p->legend->setBorderPen(Qt::NoPen);
  }
  QFont f = memory_->font();
  f.setPointSizeF(scaled_pt(7.5));
  for (const ContextMarker& m : markers_) {
    m.line->setPen(QPen(marker_color(), 1.4 * std::max(1.0, ui_scale()), Qt::DashLine));
    m.label->setColor(marker_color());
    m.label->setFont(f);
  }
  policies_.clear();  // the graphs take the theme's policy colours at the next frame
  for (QCustomPlot* p : {memory_, throughput_, perplexity_, agreement_, kl_}) p->replot();
}

std::vector<QCustomPlot*> CurvesPanel::plotsForMode(const std::string& mode) const {
  if (mode == "forced") return {memory_, perplexity_, agreement_, kl_};
  return {memory_, throughput_};
}

const CurvesPanel::ContextMarker* CurvesPanel::markerOf(const QCustomPlot* plot) const {
  for (const ContextMarker& m : markers_)
    if (m.plot == plot) return &m;
  return nullptr;
}

bool CurvesPanel::contextMarkerShown(const QCustomPlot* plot) const {
  const ContextMarker* m = markerOf(plot);
  return m && m->line->visible();
}

double CurvesPanel::contextMarkerAt(const QCustomPlot* plot) const {
  const ContextMarker* m = markerOf(plot);
  return m ? m->line->point1->coords().x() : NAN;
}

// Where the stream passes the model's trained context: past it, the full
// cache's queries sit at positions the model never saw. The quality plots
// count scored tokens, one a position: the same x.
void CurvesPanel::placeMarkers(const StudioSnapshot& s) {
  int64_t longest = 0;
  for (const auto& pane : s.panes) longest = std::max(longest, pane.stream_length);
  const bool forced = s.mode == "forced";
  for (const ContextMarker& m : markers_) {
    const bool shown = s.context > 0 && longest > 0 && (m.plot == memory_ || forced);
    m.line->setVisible(shown);
    m.label->setVisible(shown);
    if (!shown) continue;
    // Keep the marker in view from the start: the demo is about crossing it.
    QCPAxis* x = m.plot->xAxis;
    if (x->range().upper < s.context * 1.05) x->setRange(0, s.context * 1.1);
    m.line->point1->setCoords(s.context, 0);
    m.line->point2->setCoords(s.context, 1);
    // Placed once the range is known (the label goes on the side of the line with room).
    place_context_label(m.label, x, double(s.context), s.context);
    if (m.plot->isVisible()) m.plot->replot(QCustomPlot::rpQueuedRefresh);
  }
}

// Policies of one budget hold the same bytes at every step (StreamingLLM, H2O and TOVA at 64 tokens):
// their lines lay one on another and the last drawn hid the rest. A line equal to an earlier one is
// dashed over it, so both show, and its legend entry says which it equals.
void CurvesPanel::name_coinciding(QCustomPlot* plot, const std::vector<Series>& series) {
  bool renamed = false;
  for (int i = 0; i < plot->graphCount() && i < int(series.size()); ++i) {
    QCPGraph* g = plot->graph(i);
    if (!g->property("h2o_base_name").isValid()) g->setProperty("h2o_base_name", g->name());
    QString same;
    for (int j = 0; j < i && same.isEmpty(); ++j)
      if (!series[size_t(i)].y.empty() && series[size_t(i)].x == series[size_t(j)].x && series[size_t(i)].y == series[size_t(j)].y)
        same = plot->graph(j)->property("h2o_base_name").toString();
    QPen pen = g->pen();
    pen.setStyle(same.isEmpty() ? Qt::SolidLine : Qt::DashLine);
    g->setPen(pen);
    const QString name = g->property("h2o_base_name").toString() + (same.isEmpty() ? QString() : " (= " + same + ")");
    if (name != g->name()) g->setName(name), renamed = true;
  }
  if (renamed) fit_legend(plot);
}

void CurvesPanel::draw(const StudioSnapshot& s) {
  if (const auto policies = snapshot_policies(s); policies != policies_) {
    policies_ = policies;
    for (QCustomPlot* p : {memory_, throughput_, perplexity_, agreement_, kl_}) set_policy_graphs(p, policies_);
  }
  const bool forced = s.mode == "forced";
  second_->setCurrentIndex(forced ? 1 : 0);
  auto fill = [](QCustomPlot* plot, const std::vector<Series>& series, double y_scale, const AxisRange& y) {
    for (int i = 0; i < plot->graphCount(); ++i) {
      if (i >= int(series.size())) {
        plot->graph(i)->data()->clear();
        continue;
      }
      Series scaled = series[size_t(i)];
      for (double& v : scaled.y) v *= y_scale;
      set_series(plot->graph(i), scaled);
    }
    rescale(plot, true, y);
    thin_ticks(plot);
    if (plot->isVisible()) plot->replot(QCustomPlot::rpQueuedRefresh);
  };
  const MemoryUnit unit = memory_unit(s.kv_bytes);
  memory_->yAxis->setLabel(QString("live KV (%1)").arg(unit.name));
  fill(memory_, s.kv_bytes, unit.per_byte, {});
  name_coinciding(memory_, s.kv_bytes);
  fill(throughput_, s.throughput, 1.0, s.throughput_range);
  fill(perplexity_, s.perplexity, 1.0, s.perplexity_range);
  fill(agreement_, s.agreement, 1.0, {});
  fill(kl_, s.kl, 1.0, {});
  if (forced) agreement_->yAxis->setRange(std::min(0.0, agreement_->yAxis->range().lower), 1.05);
  placeMarkers(s);  // after the fills: each x range is known
  if (forced && agreement_->isVisible()) agreement_->replot(QCustomPlot::rpQueuedRefresh);
}

}  // namespace h2o::ui
