#include "policy_pane.h"

#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include "core/base/format.h"
#include "ui/heatmap_plot.h"
#include "ui/raster_plot.h"
#include "ui/sparsity_meter.h"
#include "ui/theme.h"
#include "ui/token_flow_view.h"

namespace h2o::ui {


static QWidget* captioned(const QString& caption, QWidget* body, QLabel** label_out = nullptr) {
  auto* box = new QWidget;
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 2, 0, 0);
  layout->setSpacing(1);
  auto* label = new QLabel(caption);
  label->setStyleSheet("color: #8fa3ae; font-size: 8pt;");
  // A long caption is clipped rather than widening the pane (and the window).
  label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  layout->addWidget(label);
  layout->addWidget(body, 1);
  if (label_out) *label_out = label;
  return box;
}

PolicyPane::PolicyPane(const PolicyConfig& policy, QWidget* parent) : QWidget(parent), policy_(policy) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->setSpacing(3);
  const QColor color = policy_color(policy);
  title_ = new QLabel(policy_title(policy));
  title_->setToolTip(QString::fromStdString(std::string(policy.unit().description)));
  title_->setStyleSheet(QString("font-weight: bold; font-size: 11pt; color: %1; border-bottom: 2px solid %1;")
                            .arg(color.name()));
  numbers_ = new QLabel("—");
  numbers_->setStyleSheet("font-size: 8.5pt;");
  numbers_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  numbers_->setWordWrap(true);  // narrow panes wrap their numbers instead of growing
  title_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  meter_ = new SparsityMeter;
  text_ = new TokenFlowView;
  text_->setPolicy(policy);
  heatmap_ = new HeatmapPlot;
  raster_ = new RasterPlot;

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(captioned("Stream (colour = fate of each token in this cache)", text_));
  splitter->addWidget(captioned("Attention heatmap", heatmap_, &heatmap_caption_));
  splitter->addWidget(captioned("Survival raster (who is still cached)", raster_));
  // Proportions of the pane (the splitter scales them): the heatmap needs room for its labels.
  splitter->setSizes({38, 38, 24});
  splitter->setChildrenCollapsible(false);

  layout->addWidget(title_);
  layout->addWidget(numbers_);
  layout->addWidget(meter_);
  layout->addWidget(splitter, 1);

  connect(text_, &TokenFlowView::tokenClicked, this, &PolicyPane::positionClicked);
  connect(heatmap_, &HeatmapPlot::positionClicked, this, &PolicyPane::positionClicked);
  connect(raster_, &RasterPlot::positionClicked, this, &PolicyPane::positionClicked);
}

QString PolicyPane::numbersText() const { return numbers_->text(); }

void PolicyPane::draw(const PaneSnapshot& pane, int top_k, const QString& view_caption, int64_t highlight) {
  title_->setText(QString("%1  <span style='color:#8fa3ae; font-weight:normal; font-size:8pt'>%2</span>")
                      .arg(policy_title(policy_), QString::fromStdString(pane.policy)));
  QString numbers = QString("<b>%1</b> cached · <b>%2</b> KV · <b>%3</b> tok/s · %4 in stream")
                        .arg(pane.cached_tokens)
                        .arg(QString::fromStdString(format_bytes(pane.live_bytes)))
                        .arg(pane.tokens_per_s, 0, 'f', 1)
                        .arg(pane.stream_length);
  if (!std::isnan(pane.perplexity)) numbers += QString(" · ppl <b>%1</b>").arg(pane.perplexity, 0, 'f', 2);
  if (!std::isnan(pane.agreement) && pane.config.evicts())
    numbers += QString(" · agree <b>%1 %</b>").arg(pane.agreement * 100, 0, 'f', 1);
  if (!pane.stopped.empty())
    numbers += QString("<br><span style='color:#e06c75'><b>stopped:</b> %1</span>")
                   .arg(QString::fromStdString(pane.stopped).toHtmlEscaped());
  numbers_->setText(numbers);
  meter_->setValue(pane.sparsity, top_k, policy_color(policy_));
  text_->setHighlight(highlight);
  text_->setTokens(pane.tokens);
  text_->repaint();
  heatmap_caption_->setText("Attention · " + view_caption + " · queries × cache slots");
  heatmap_->setData(pane.heatmap);
  heatmap_->replot(QCustomPlot::rpImmediateRefresh);
  raster_->setData(pane.raster);
  raster_->replot(QCustomPlot::rpImmediateRefresh);
}

}  // namespace h2o::ui
