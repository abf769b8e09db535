#include "policy_pane.h"

#include <QLabel>
#include <QRegularExpression>
#include <QSplitter>
#include <QVBoxLayout>

#include "core/base/format.h"
#include "ui/heatmap_plot.h"
#include "ui/raster_plot.h"
#include "ui/sparsity_meter.h"
#include "ui/theme.h"
#include "ui/token_flow_view.h"

namespace h2o::ui {

QString view_caption(const StudioSnapshot& s) {
  const int group = std::max(1, s.heads / std::max(1, s.kv_heads));
  return QString("layer %1 · %2")
      .arg(s.shown_layer)
      .arg(s.shown_head < 0 ? QString("mean over %1 heads").arg(s.heads)
                            : QString("head %1 (KV %2)").arg(s.shown_head).arg(s.shown_head / group));
}

PolicyPane::PolicyPane(const PolicyConfig& policy, QWidget* parent) : QWidget(parent), policy_(policy) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(3, 3, 3, 3);
  layout->setSpacing(2);
  title_ = new QLabel(policy_title(policy));
  title_->setToolTip(QString::fromStdString(std::string(policy.unit().description)));
  // A long title is elided by the label's width rather than wrapping or widening the pane.
  title_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  title_->setTextFormat(Qt::RichText);
  title_->setWordWrap(false);
  numbers_ = new QLabel("—");
  numbers_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // One line: a narrow pane elides it (the tooltip has it all); a stopped session adds its reason.
  numbers_->setWordWrap(false);
  numbers_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  meter_ = new SparsityMeter;
  text_ = new TokenFlowView;
  text_->setPolicy(policy);
  heatmap_ = new HeatmapPlot;
  overview_ = new RasterPlot(RasterPlot::Role::Overview);
  detail_ = new RasterPlot(RasterPlot::Role::Detail);

  text_->setToolTip("The stream: colour = fate of each token in this cache (legend in the status bar)");
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(text_);
  splitter->addWidget(heatmap_);
  splitter->addWidget(overview_);
  splitter->addWidget(detail_);
  // Proportions of the pane (the splitter scales them); minimum heights keep every plot readable.
  splitter->setSizes({26, 34, 18, 22});
  splitter->setChildrenCollapsible(false);

  layout->addWidget(title_);
  layout->addWidget(numbers_);
  layout->addWidget(meter_);
  layout->addWidget(splitter, 1);
  restyle();

  connect(text_, &TokenFlowView::tokenClicked, this, &PolicyPane::positionClicked);
  connect(text_, &TokenFlowView::scrollRequested, this, &PolicyPane::textScrollRequested);
  connect(heatmap_, &HeatmapPlot::positionClicked, this, &PolicyPane::positionClicked);
  connect(detail_, &RasterPlot::positionClicked, this, &PolicyPane::positionClicked);
  connect(overview_, &RasterPlot::detailRequested, this, &PolicyPane::detailRequested);
  connect(detail_, &RasterPlot::detailRequested, this, &PolicyPane::detailRequested);
  for (RasterPlot* r : {overview_, detail_})
    connect(r, &RasterPlot::pixelsChanged, this, [this] {
      emit rasterPixels(overview_->axisRect()->rect().size(), detail_->axisRect()->rect().size());
    });
}

void PolicyPane::restyle() {
  const QColor color = policy_color(policy_);
  title_->setStyleSheet(QString("font-weight: bold; font-size: %2pt; color: %1; border-bottom: 2px solid %1;")
                            .arg(color.name())
                            .arg(scaled_pt(11)));
  numbers_->setStyleSheet(QString("font-size: %1pt;").arg(scaled_pt(8.5)));
  text_->restyle();
  heatmap_->restyle();
  overview_->restyle();
  detail_->restyle();
}

QString PolicyPane::numbersText() const { return numbers_->text(); }

void PolicyPane::draw(const StudioSnapshot& s, const PaneSnapshot& pane, int64_t highlight) {
  const QString title = policy_title(policy_);
  const QString describe = QString::fromStdString(pane.policy);
  title_->setText(QString("%1&nbsp;&nbsp;<span style='color:%3; font-weight:normal; font-size:%4pt'>%2</span>")
                      .arg(title, describe.toHtmlEscaped(), muted_text_color().name())
                      .arg(scaled_pt(8)));
  title_->setToolTip(title + " · " + describe + "\n" + QString::fromStdString(std::string(policy_.unit().description)));
  QString numbers = QString("<b>%1</b> cached · <b>%2</b> KV · <b>%3</b> tok/s · %4 in stream")
                        .arg(pane.cached_tokens)
                        .arg(QString::fromStdString(format_bytes(pane.live_bytes)))
                        .arg(pane.tokens_per_s, 0, 'f', 1)
                        .arg(pane.stream_length);
  if (!std::isnan(pane.perplexity)) numbers += QString(" · ppl <b>%1</b>").arg(pane.perplexity, 0, 'f', 2);
  if (!std::isnan(pane.agreement) && pane.config.evicts())
    numbers += QString(" · agree <b>%1 %</b>").arg(pane.agreement * 100, 0, 'f', 1);
  if (!pane.stopped.empty())
    numbers += QString("<br><span style='color:%2'><b>stopped:</b> %1</span>")
                   .arg(QString::fromStdString(pane.stopped).toHtmlEscaped(), warning_color().name());
  numbers_->setText(numbers);
  numbers_->setToolTip(QString(numbers).replace("<br>", "\n").remove(QRegularExpression("<[^>]*>")));
  meter_->setValue(pane.sparsity, s.top_k, policy_color(policy_));
  text_->setHighlight(highlight);
  text_->setTokens(pane.tokens, pane.text_follows_end, pane.stream_length);
  text_->repaint();
  // In the pane the header names the policy; an exported file names everything.
  const QString view = view_caption(s);
  const QString compact_view = QString("L%1 %2").arg(s.shown_layer).arg(s.shown_head < 0 ? QString("mean") : QString("H%1").arg(s.shown_head));
  const QString exported = QString("%1 (%2) · %3").arg(title, describe, view);
  // Before the first step there is no step to name.
  const QString at_step = s.step < 0 ? QString("no steps yet") : QString("step %1").arg(s.step);
  heatmap_->setData(pane.heatmap, QString("attention · %1 · %2").arg(compact_view, at_step),
                    QString("%1 · attention · %2").arg(exported, at_step));
  heatmap_->replot(QCustomPlot::rpImmediateRefresh);
  // The trained context matters where positions are not rolled and the cache outgrows it: the full cache.
  const int64_t context = !pane.config.evicts() && !pane.config.rolling ? s.context : 0;
  const SurvivalRaster& o = pane.overview;
  overview_->setData(o, QString("whole stream · %1 pos · %2 steps").arg(o.positions()).arg(o.steps()),
                     QString("%1 · survival · whole stream: %2 positions × %3 steps%4")
                         .arg(exported)
                         .arg(o.positions())
                         .arg(o.steps())
                         .arg(o.binned() ? " (binned)" : ""),
                     pane.detail.first_position, pane.detail.end_position, context);
  overview_->replot(QCustomPlot::rpImmediateRefresh);
  const SurvivalRaster& d = pane.detail;
  const QString stretch = d.last_step < d.first_step
                              ? QString("no steps yet")
                              : QString("positions %1–%2 · steps %3–%4")
                                    .arg(d.first_position)
                                    .arg(std::max<int64_t>(d.first_position, d.end_position - 1))
                                    .arg(d.first_step)
                                    .arg(d.last_step);
  detail_->setData(d, QString("detail · %1").arg(stretch), QString("%1 · survival · %2").arg(exported, stretch), -1, -1,
                   context);
  detail_->replot(QCustomPlot::rpImmediateRefresh);
}

}  // namespace h2o::ui
