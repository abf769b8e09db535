#include "ui/views/policy_pane.h"

#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include "core/base/format.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/raster_plot.h"
#include "ui/views/sparsity_meter.h"
#include "ui/plot/plot_helpers.h"
#include "ui/plot/theme.h"
#include "ui/views/token_flow_view.h"

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
  layout->setContentsMargins(2, 2, 2, 2);
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
  stack_ = new QSplitter(Qt::Vertical);
  side_ = new QSplitter(Qt::Horizontal);
  rasters_ = new QSplitter(Qt::Vertical);
  for (QSplitter* s : {stack_, side_, rasters_}) s->setChildrenCollapsible(false);
  connect(stack_, &QSplitter::splitterMoved, this, [this] { stack_dragged_ = true; });
  stack_->installEventFilter(this);
  header_ = new QGridLayout;
  header_->setContentsMargins(0, 0, 0, 0);
  header_->setSpacing(2);
  layout->addLayout(header_);
  layout->addWidget(stack_, 1);
  setArrangement(Arrangement::Stacked);
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

void PolicyPane::setArrangement(Arrangement arrangement) {
  if (arrangement == arrangement_ && arranged_) return;
  arranged_ = true;
  arrangement_ = arrangement;
  arrangeHeader();
  // Moving a widget into another splitter takes it out of the one it was in.
  if (arrangement == Arrangement::Wide) {
    rasters_->addWidget(overview_);
    rasters_->addWidget(detail_);
    side_->addWidget(heatmap_);
    side_->addWidget(rasters_);
    stack_->addWidget(text_);
    stack_->addWidget(side_);
    // The heatmap's colour scale and axis title take ~110 px: it gets the larger share.
    side_->setStretchFactor(0, 3);
    side_->setStretchFactor(1, 2);
    side_->setSizes({60, 40});
    rasters_->setSizes({45, 55});
    side_->show();
    rasters_->show();
  } else {
    for (QWidget* w : std::initializer_list<QWidget*>{text_, heatmap_, overview_, detail_})
      stack_->addWidget(w);
    side_->setParent(this);
    rasters_->setParent(this);
    side_->hide();
    rasters_->hide();
  }
  shareHeight();
}

void PolicyPane::setTextEmphasis(bool on) {
  if (on == text_emphasis_) return;
  text_emphasis_ = on;
  stack_dragged_ = false;
  shareHeight();
}

// Proportions of the pane; minimum heights keep every plot readable, so an emphasised text takes
// its share from the plots only down to their least. Emphasised, the shares are kept as the pane
// resizes (until a handle is dragged): the splitter alone gives growth to the plots.
void PolicyPane::shareHeight() {
  QList<int> shares;
  if (arrangement_ == Arrangement::Wide) shares = text_emphasis_ ? QList<int>{45, 55} : QList<int>{20, 80};
  else shares = text_emphasis_ ? QList<int>{40, 28, 14, 18} : QList<int>{26, 34, 18, 22};
  if (text_emphasis_ && stack_->height() > 0)
    for (int& share : shares) share = share * stack_->height() / 100;
  stack_->setSizes(shares);
}

// Stacked: title, numbers and meter on three lines. Wide: the meter beside the title.
void PolicyPane::arrangeHeader() {
  for (QWidget* w : std::initializer_list<QWidget*>{title_, numbers_, meter_})
    header_->removeWidget(w);
  if (arrangement_ == Arrangement::Wide) {
    // The meter as wide as its words, the title the rest (its parameters elided there, never under it).
    header_->addWidget(title_, 0, 0);
    header_->addWidget(meter_, 0, 1);
    header_->addWidget(numbers_, 1, 0, 1, 2);
    header_->setColumnStretch(0, 1);
    header_->setColumnStretch(1, 0);
    meter_->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  } else {
    header_->setColumnStretch(0, 0);
    header_->setColumnStretch(1, 0);
    meter_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    header_->addWidget(title_, 0, 0, 1, 2);
    header_->addWidget(numbers_, 1, 0, 1, 2);
    header_->addWidget(meter_, 2, 0, 1, 2);
  }
}

QSize PolicyPane::minimumFor(Arrangement arrangement) const {
  const auto h = [](const QWidget* w) { return std::max(w->minimumHeight(), w->minimumSizeHint().height()); };
  const int handle = stack_->handleWidth();
  const int title = std::max(title_->sizeHint().height(), 1), numbers = numbers_->sizeHint().height();
  const int margins = layout()->contentsMargins().top() + layout()->contentsMargins().bottom() + layout()->spacing();
  const int plot_w = std::max({heatmap_->minimumWidth(), overview_->minimumWidth(), detail_->minimumWidth()});
  if (arrangement == Arrangement::Wide) {
    const int header = std::max(title, h(meter_)) + header_->spacing() + numbers;
    const int plots = std::max(h(heatmap_), h(overview_) + handle + h(detail_));
    return {heatmap_->minimumWidth() + handle + plot_w + 6, margins + header + h(text_) + handle + plots};
  }
  const int header = title + numbers + h(meter_) + 2 * header_->spacing();
  const int plots = h(heatmap_) + h(overview_) + h(detail_) + 2 * handle;
  return {plot_w + 6, margins + header + h(text_) + handle + plots};
}

void PolicyPane::restyle() {
  const QColor color = policy_color(policy_);
  title_->setStyleSheet(QString("font-weight: bold; font-size: %2pt; color: %1; border-bottom: 2px solid %1;")
                            .arg(color.name())
                            .arg(scaled_pt(11)));
  numbers_->setStyleSheet(QString("font-size: %1pt;").arg(scaled_pt(8.5)));
  meter_->updateGeometry();  // its words' width follows the scale
  if (!title_brief_.isEmpty()) fitTitle();
  text_->restyle();
  heatmap_->restyle();
  overview_->restyle();
  detail_->restyle();
}

QString PolicyPane::numbersText() const { return numbers_->text(); }

// The long line where it fits the label, else the short one (measured as if all bold, with room to spare).
void PolicyPane::fitNumbers() {
  QFont bold = numbers_->font();
  bold.setBold(true);
  const QFontMetrics metrics(bold);
  for (const QString& form : numbers_forms_) {
    const QString first_line = plain_text(QString(form).section("<br>", 0, 0));
    if (metrics.horizontalAdvance(first_line) <= numbers_->width() || &form == &numbers_forms_.back()) {
      numbers_->setText(form);
      return;
    }
  }
}

// The policy's name whole, then as much of its parameters as the label has room for ("…" where cut;
// the tooltip has them all).
void PolicyPane::fitTitle() {
  QFont name_font = font(), brief_font = font();
  name_font.setBold(true);
  name_font.setPointSizeF(scaled_pt(11));
  brief_font.setPointSizeF(scaled_pt(8));
  const QString name = policy_title(policy_);
  const int room = title_->width() - QFontMetrics(name_font).horizontalAdvance(name) -
                   QFontMetrics(brief_font).horizontalAdvance("  ") - 4;
  const QString brief = QFontMetrics(brief_font).elidedText(title_brief_, Qt::ElideRight, std::max(0, room));
  title_->setText(QString("%1&nbsp;&nbsp;<span style='color:%3; font-weight:normal; font-size:%4pt'>%2</span>")
                      .arg(name, brief.toHtmlEscaped(), muted_text_color().name())
                      .arg(scaled_pt(8)));
}

void PolicyPane::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (!title_brief_.isEmpty()) fitTitle();
  if (!numbers_forms_.isEmpty()) fitNumbers();
}

// The stack's own resizes (a rearranged pane can get a new stack at the same pane size).
bool PolicyPane::eventFilter(QObject* watched, QEvent* event) {
  if (watched == stack_ && event->type() == QEvent::Resize && text_emphasis_ && !stack_dragged_) shareHeight();
  return QWidget::eventFilter(watched, event);
}

void PolicyPane::showIdle(const QString& state, const QString& brief) {
  const QString plots = brief.isEmpty() ? state : brief;
  numbers_forms_.clear();
  numbers_->setText(state.toHtmlEscaped());
  numbers_->setToolTip(state);
  text_->setTokens({}, true, 0);
  text_->update();
  HeatmapData empty;
  empty.note = plots.toStdString();
  heatmap_->setData(std::move(empty), {"attention · " + plots, plots, "attention · " + plots});
  heatmap_->replot(QCustomPlot::rpQueuedReplot);  // no snapshot's draw comes to replot them
  for (RasterPlot* raster : {overview_, detail_}) {
    raster->setData({}, {plots, plots, "survival · " + plots});
    raster->replot(QCustomPlot::rpQueuedReplot);
  }
}

void PolicyPane::draw(const StudioSnapshot& s, const PaneSnapshot& pane, int64_t highlight) {
  const QString title = policy_title(policy_);
  const QString describe = QString::fromStdString(pane.policy);
  title_brief_ = QString::fromStdString(pane.config.describe(false));  // G and R in the tooltip
  fitTitle();
  title_->setToolTip(title + " · " + describe + "\n" + QString::fromStdString(std::string(policy_.unit().description)));
  // The figures that matter most first; where the line is too narrow, the stream's length (the same
  // in every pane, and in the tooltip) goes first, then the rate, never the quality figures at the end.
  const double rate = pane.tokens_per_s;
  QStringList parts{QString("<b>%1</b> cached").arg(pane.cached_tokens)};
  // A quantized pane says how many of them are codes (the rest: f16 sinks and residual).
  if (pane.config.kv.quantized()) parts << QString("<b>%1</b> quantized").arg(pane.quantized_tokens);
  parts << QString("<b>%1</b> KV").arg(QString::fromStdString(format_bytes(pane.live_bytes)))
        << QString("<b>%1</b> tok/s").arg(rate, 0, 'f', rate < 100 ? 1 : 0);
  const QString in_stream = QString("%1 in stream").arg(pane.stream_length);
  QStringList quality;
  if (!std::isnan(pane.perplexity)) quality << QString("ppl <b>%1</b>").arg(pane.perplexity, 0, 'f', 2);
  if (!std::isnan(pane.agreement) && pane.config.evicts())
    quality << QString("agree <b>%1 %</b>").arg(pane.agreement * 100, 0, 'f', 1);
  // The planted needle, in this pane: what it holds of it now, or when it let the last of it go.
  const size_t index = size_t(&pane - s.panes.data());
  if (index < s.needle.panes.size() && s.needle.panes[index].begin >= 0) {
    const NeedlePane& needle = s.needle.panes[index];
    quality << (needle.lost_step >= 0 ? QString("needle <b>lost</b> at step %1").arg(needle.lost_step)
                                      : QString("needle <b>%1 %</b> held").arg(std::lround(needle.survival * 100)));
  }
  const QString stopped =
      pane.stopped.empty() ? QString()
                           : QString("<br><span style='color:%2'><b>stopped:</b> %1</span>")
                                 .arg(QString::fromStdString(pane.stopped).toHtmlEscaped(), warning_color().name());
  QStringList without_rate = parts;
  without_rate.removeLast();  // the rate is the last of the parts
  numbers_forms_ = {(parts + QStringList{in_stream} + quality).join(" · ") + stopped,
                    (parts + quality).join(" · ") + stopped, (without_rate + quality).join(" · ") + stopped};
  fitNumbers();
  numbers_->setToolTip(plain_text(QString(numbers_forms_.front()).replace("<br>", "\n")));
  meter_->setValue(pane.sparsity, s.top_k, policy_color(policy_));
  text_->setHighlight(highlight);
  text_->setTokens(pane.tokens, pane.text_follows_end, pane.stream_length);
  text_->update();
  // In the pane the header names the policy; an exported file names everything.
  const QString view = view_caption(s);
  const QString compact_view = QString("L%1 %2").arg(s.shown_layer).arg(s.shown_head < 0 ? QString("mean") : QString("H%1").arg(s.shown_head));
  const QString exported = QString("%1 (%2) · %3").arg(title, describe, view);
  // Before the first step there is no step to name.
  const QString at_step = s.step < 0 ? QString("no steps yet") : QString("step %1").arg(s.step);
  heatmap_->setData(pane.heatmap, {QString("attention · %1 · %2").arg(compact_view, at_step),
                                   QString("%1 · %2").arg(compact_view, at_step),
                                   QString("%1 · attention · %2").arg(exported, at_step)});
  heatmap_->setNeedle(pane.needle_begin, pane.needle_end);
  heatmap_->replot(QCustomPlot::rpQueuedRefresh);
  // The trained context matters where positions are not rolled and the cache outgrows it: the full cache.
  const int64_t context = !pane.config.evicts() && !pane.config.rolling ? s.context : 0;
  const SurvivalRaster& o = pane.overview;
  overview_->setData(o,
                     {QString("whole stream · %1 pos · %2 steps").arg(o.positions()).arg(o.steps()),
                      QString("whole · %1 pos · %2 steps").arg(o.positions()).arg(o.steps()),
                      QString("%1 · survival · whole stream: %2 positions × %3 steps%4")
                          .arg(exported)
                          .arg(o.positions())
                          .arg(o.steps())
                          .arg(o.binned() ? " (binned)" : "")},
                     pane.detail.first_position, pane.detail.end_position, context);
  overview_->setNeedle(pane.needle_begin, pane.needle_end);
  overview_->replot(QCustomPlot::rpQueuedRefresh);
  const SurvivalRaster& d = pane.detail;
  const bool none = d.last_step < d.first_step;
  const QString positions = QString("%1–%2").arg(d.first_position).arg(std::max<int64_t>(d.first_position, d.end_position - 1));
  const QString steps = QString("%1–%2").arg(d.first_step).arg(d.last_step);
  QString stretch = none ? QString("no steps yet") : QString("positions %1 · steps %2").arg(positions, steps);
  // The head's own steps of older positions are summarised: there the detail and the text show the layer's.
  const QString summarised = pane.head_summarised_before > d.first_position && !none
                                 ? QString(" · before %1: the layer's").arg(pane.head_summarised_before)
                                 : QString();
  stretch += summarised;
  detail_->setData(d,
                   {QString("detail · %1").arg(stretch),
                    none ? QString("detail · no steps yet") : QString("detail · %1 · steps %2%3").arg(positions, steps, summarised),
                    QString("%1 · survival · %2").arg(exported, stretch)},
                   -1, -1, context);
  detail_->setNeedle(pane.needle_begin, pane.needle_end);
  detail_->replot(QCustomPlot::rpQueuedRefresh);
}

}  // namespace h2o::ui
