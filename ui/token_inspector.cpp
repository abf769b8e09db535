#include "token_inspector.h"

#include <QLabel>
#include <map>
#include <QScrollArea>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/plot_helpers.h"
#include "ui/theme.h"

namespace h2o::ui {

TokenInspector::TokenInspector(QWidget* parent) : QWidget(parent) {
  plot_ = make_plot("Token: accumulated score", "step", "score");
  // Up to 3 policies x KV heads lines: colour = policy, dash = KV head, told in the text below.
  plot_->legend->setVisible(false);
  details_ = new QLabel("Click a token in any pane (text, heatmap column or raster) to follow it here.");
  details_->setWordWrap(true);
  details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setStyleSheet("font-size: 8pt; padding: 3px;");
  auto* scroll = new QScrollArea;
  scroll->setWidget(details_);
  scroll->setWidgetResizable(true);
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(plot_);
  splitter->addWidget(scroll);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
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
  layout->addWidget(follow, 0, Qt::AlignRight);
  setMinimumWidth(200);
}

QString TokenInspector::detailsText() const { return details_->text(); }

void TokenInspector::draw(const InspectionSnapshot& in) {
  plot_->clearGraphs();
  follow_->setVisible(!in.followed);
  if (in.position < 0) {
    details_->setText(in.followed ? "No heavy hitter yet (the stream still fits in H2O's recent window). Click a token in any pane "
                                    "(text, heatmap column or raster) to follow it here."
                                  : "");
    plot_->replot(QCustomPlot::rpImmediateRefresh);
    return;
  }
  const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
  const char* dash_names[] = {"solid", "dashed", "dotted", "dash-dot"};
  QString html = QString("%1<b>“%2”</b> at stream position <b>%3</b>")
                     .arg(in.followed ? "<span style='color:#8fa3ae'>Top H2O heavy hitter (click a token to pin "
                                        "another):</span><br>"
                                      : "")
                     .arg(QString::fromStdString(in.text).toHtmlEscaped())
                     .arg(in.position);
  size_t kv_heads = 0;
  for (size_t i = 0; i < in.policies.size(); ++i) {
    const auto& p = in.policies[i];
    const QColor color = policy_color(p.config);
    kv_heads = std::max(kv_heads, p.score_by_kv_head.size());
    for (size_t kv = 0; kv < p.score_by_kv_head.size(); ++kv) {
      QCPGraph* g = plot_->addGraph();
      g->setPen(QPen(color, 1.6, styles[kv % 4]));
      g->setName(QString("%1 L%2 KV%3").arg(policy_title(p.config)).arg(p.score_layer).arg(kv));
      set_series(g, p.score_by_kv_head[kv]);
    }
    html += QString("<br><span style='color:%1'><b>%2</b></span>: fed at step %3, now <i>%4</i>; ")
                .arg(color.name(), policy_title(p.config))
                .arg(p.born_step)
                .arg(QString::fromStdString(fate_label(p.config, p.fate_now)));
    if (p.evictions.empty()) {
      html += "never evicted";
    } else {
      // Grouped by step: a StreamingLLM cut evicts from every head at once.
      std::map<int64_t, QStringList> by_step;
      for (const EvictionAt& e : p.evictions) by_step[e.step] << QString("L%1/KV%2").arg(e.layer).arg(e.kv_head);
      QStringList parts;
      for (const auto& [step, heads] : by_step)
        parts << QString("at step %1 by %2").arg(step).arg(heads.size() > 3 ? QString("%1 layer/KV heads").arg(heads.size())
                                                                             : heads.join(", "));
      html += "evicted " + parts.join("; ");
    }
  }
  if (kv_heads > 0) {
    QStringList lines;
    for (size_t kv = 0; kv < kv_heads; ++kv) lines << QString("KV head %1 %2").arg(kv).arg(dash_names[kv % 4]);
    html += "<br><span style='color:#8fa3ae'>Score lines: colour = policy; " + lines.join(", ") + "</span>";
  }
  details_->setText(html);
  rescale(plot_);
  plot_->replot(QCustomPlot::rpImmediateRefresh);
}

}  // namespace h2o::ui
