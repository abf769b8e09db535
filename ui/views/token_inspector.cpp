#include "ui/views/token_inspector.h"

#include <QLabel>
#include <cmath>
#include <map>
#include <set>
#include <QScrollArea>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/plot/plot_helpers.h"
#include "ui/plot/theme.h"

namespace h2o::ui {
namespace {

// The newest score drawn for it (the first line's), or NaN.
double last_score(const InspectionSnapshot::PerPolicy& p) {
  if (p.score_lines.empty() || p.score_lines.front().series.y.empty()) return NAN;
  return p.score_lines.front().series.y.back();
}

// "; every layer and KV head let it go at step 150", "; layer 3's KV head 0 let it go at step 14; 12 of its 16 (layer,
// KV head) caches at step 20": grouped by step, as a StreamingLLM cut evicts from every head at once.
QString evictionWords(const InspectionSnapshot::PerPolicy& p, int caches) {
  if (p.evictions.empty()) return "; no layer or KV head has let it go";
  std::map<int64_t, QStringList> by_step;
  // kv_head -1: a position older than the heads' exact steps, whose layer let it go then.
  for (const EvictionAt& e : p.evictions)
    by_step[e.step] << (e.kv_head < 0 ? QString("layer %1").arg(e.layer)
                                      : QString("layer %1's KV head %2").arg(e.layer).arg(e.kv_head));
  QStringList parts;
  for (const auto& [step, heads] : by_step) {
    const QString who = heads.size() == caches ? QString("every layer and KV head")
                        : heads.size() > 3     ? QString("%1 of its %2 (layer, KV head) caches").arg(heads.size()).arg(caches)
                                               : heads.join(", ");
    parts << QString("%1 let it go at step %2").arg(who).arg(step);
  }
  QString words = "; " + parts.join("; ");
  if (p.heads_summarised) words += " (older than the heads' exact steps: a layer alone is when its last KV head let it go)";
  return words;
}

}  // namespace

TokenInspector::TokenInspector(QWidget* parent) : QWidget(parent) {
  plot_ = make_plot("Token: accumulated score", "step", "score");
  title_ = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0));
  // Up to 4 policies x kInspectorHeadLines lines: colour = policy, dash = KV head (solid: their mean), named in the legend above.
  legend_above(plot_);
  details_ = new QLabel("Click a token in any pane (text, heatmap column or raster) to follow it here.");
  details_->setWordWrap(true);
  details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setObjectName("inspector_details");
  auto* scroll = new QScrollArea;
  scroll->setWidget(details_);
  scroll->setWidgetResizable(true);
  // Side by side: the bottom area is wide and short.
  auto* right = new QWidget;
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(0, 0, 0, 0);
  rv->setSpacing(0);
  rv->addWidget(scroll, 1);
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(plot_);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setChildrenCollapsible(false);
  scroll->setMinimumSize(160, 40);
  auto* follow = new QToolButton;
  follow->setText("Follow the top heavy hitter");
  follow->setToolTip("Stop following the clicked token; show H2O's highest-scored heavy hitter instead");
  follow->setAutoRaise(true);
  connect(follow, &QToolButton::clicked, this, &TokenInspector::followRequested);
  follow_ = follow;
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(splitter, 1);
  rv->addWidget(follow, 0, Qt::AlignRight);
  setMinimumWidth(200);
}

QString TokenInspector::detailsText() const { return details_->text(); }

void TokenInspector::restyle() {
  style_plot(plot_);
  plot_->legend->setBrush(Qt::NoBrush);
  plot_->legend->setBorderPen(Qt::NoPen);
  details_->setStyleSheet(QString("font-size: %1pt; padding: 3px;").arg(scaled_pt(8)));
}

void TokenInspector::draw(const InspectionSnapshot& in) {
  plot_->clearGraphs();
  follow_->setVisible(!in.followed);
  if (in.position < 0) {
    set_title(title_, {"Token: accumulated score", {}, {}});
    details_->setText(in.followed ? "No heavy hitter yet (the stream still fits in H2O's recent window). Click a token in any pane "
                                    "(text, heatmap column or raster) to follow it here."
                                  : "");
    plot_->replot(QCustomPlot::rpQueuedRefresh);
    return;
  }
  const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
  const char* dash_names[] = {"solid", "dashed", "dotted", "dash-dot"};
  const QString pane_title = in.pane >= 0 && size_t(in.pane) < in.policies.size()
                                 ? policy_title(in.policies[size_t(in.pane)].config)
                                 : QString();
  QString html = QString("%1<b>“%2”</b> at position <b>%3</b> of %4's stream (layer %5)")
                     .arg(in.followed ? QString("<span style='color:%1'>The top H2O heavy hitter (click a token to pin "
                                                "another):</span><br>").arg(muted_text_color().name())
                                      : QString())
                     .arg(QString::fromStdString(in.text).toHtmlEscaped())
                     .arg(in.position)
                     .arg(pane_title)
                     .arg(in.fate_layer);
  // The file says which token and layer (the details beside the plot are not in it); the pane, the
  // compact form's first thing to go.
  const int score_layer = in.policies.empty() ? in.fate_layer : in.policies.front().score_layer;
  const QString token = QString::fromStdString(in.text);
  const QString named = QString("Accumulated score of “%1” (position %2, layer %3)").arg(token).arg(in.position).arg(score_layer);
  set_title(title_, {named, QString("“%1” · layer %2").arg(token).arg(score_layer),
                     named + (pane_title.isEmpty() ? QString() : " · clicked in " + pane_title)});
  std::set<int> kv_lines;  // the KV heads drawn a line each; -1: their mean
  for (size_t i = 0; i < in.policies.size(); ++i) {
    const auto& p = in.policies[i];
    const QColor color = policy_color(p.config);
    for (const auto& line : p.score_lines) {
      kv_lines.insert(line.kv_head);
      QCPGraph* g = plot_->addGraph();
      g->setPen(QPen(color, 1.6 * std::max(1.0, ui_scale()), line.kv_head < 0 ? Qt::SolidLine : styles[line.kv_head % 4]));
      g->setName(line.kv_head < 0 ? QString("%1 mean").arg(short_policy_title(p.config))
                                  : QString("%1 KV%2").arg(short_policy_title(p.config)).arg(line.kv_head));
      if (line.series.x.empty()) g->removeFromLegend();
      set_series(g, line.series);
    }
    html += QString("<br><span style='color:%1'><b>%2</b></span>: ").arg(color.name(), policy_title(p.config));
    if (int(i) != in.pane && !p.text.empty() && p.text != in.text)
      html += QString("its own answer has “%1” here; ").arg(QString::fromStdString(p.text).toHtmlEscaped());
    html += QString("entered at step %1; %2").arg(p.born_step).arg(QString::fromStdString(p.reason).toHtmlEscaped());
    if (const double score = last_score(p); !std::isnan(score))
      html += QString(p.fate_now == Fate::Evicted ? " (its score when last held: %1)" : " (its score now: %1)").arg(score, 0, 'g', 3);
    html += evictionWords(p, in.layers * in.kv_heads);
  }
  if (!kv_lines.empty()) {
    QStringList lines;
    for (int kv : kv_lines)
      lines << (kv < 0 ? QString("the mean over the KV heads that held it at each step (choose a head to see its own)")
                       : kv_lines.size() == 1 ? QString("KV head %1").arg(kv)
                                              : QString("KV head %1 %2").arg(kv).arg(dash_names[kv % 4]));
    html += QString("<br><span style='color:%1'>Score lines (layer %2): colour = policy; ")
                .arg(muted_text_color().name())
                .arg(in.policies.empty() ? -1 : in.policies.front().score_layer) +
            lines.join(", ") + "</span>";
  }
  details_->setText(html);
  fit_legend(plot_);
  rescale(plot_);
  plot_->xAxis->rescale(true);  // the steps it has scores for, not from step 0
  if (plot_->xAxis->range().size() < 1) plot_->xAxis->setRange(plot_->xAxis->range().lower - 1, plot_->xAxis->range().upper + 1);
  thin_ticks(plot_);
  plot_->replot(QCustomPlot::rpQueuedRefresh);
}

}  // namespace h2o::ui
