#include "token_inspector.h"

#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QVBoxLayout>

#include "ui/plot_helpers.h"
#include "ui/theme.h"

namespace h2o::ui {

TokenInspector::TokenInspector(const std::vector<PolicyKind>& kinds, QWidget* parent) : QWidget(parent), kinds_(kinds) {
  plot_ = make_plot("Clicked token: score", "step", "score");
  plot_->legend->setVisible(true);
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
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
}

void TokenInspector::draw(const InspectionSnapshot& in) {
  plot_->clearGraphs();
  if (in.position < 0) {
    plot_->replot(QCustomPlot::rpImmediateRefresh);
    return;
  }
  const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
  QString html = QString("<b>“%1”</b> at stream position <b>%2</b>")
                     .arg(QString::fromStdString(in.text).toHtmlEscaped())
                     .arg(in.position);
  for (size_t i = 0; i < in.policies.size() && i < kinds_.size(); ++i) {
    const auto& p = in.policies[i];
    const QColor color = policy_color(kinds_[i]);
    for (size_t kv = 0; kv < p.score_by_kv_head.size(); ++kv) {
      QCPGraph* g = plot_->addGraph();
      g->setPen(QPen(color, 1.6, styles[kv % 4]));
      g->setName(QString("%1 L%2 KV%3").arg(policy_title(kinds_[i])).arg(p.score_layer).arg(kv));
      set_series(g, p.score_by_kv_head[kv]);
    }
    html += QString("<br><span style='color:%1'><b>%2</b></span>: fed at step %3, now <i>%4</i>; ")
                .arg(color.name(), policy_title(kinds_[i]))
                .arg(p.born_step)
                .arg(fate_name(p.fate_now));
    if (p.evictions.empty()) {
      html += "never evicted";
    } else {
      QStringList parts;
      for (const EvictionAt& e : p.evictions) parts << QString("L%1/KV%2@%3").arg(e.layer).arg(e.kv_head).arg(e.step);
      html += "evicted " + parts.join(", ");
    }
  }
  details_->setText(html);
  rescale(plot_);
  plot_->replot(QCustomPlot::rpImmediateRefresh);
}

}  // namespace h2o::ui
