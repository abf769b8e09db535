#include "ui/views/needle_view.h"

#include <QLabel>
#include <QPainter>
#include <QSplitter>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "core/analysis/needle_watch.h"
#include "ui/plot/plot_helpers.h"
#include "ui/plot/theme.h"

namespace h2o::ui {

// Each pane's layer x KV-head grid of the fraction of the needle held, side by side.
class NeedleGrids : public QWidget {
 public:
  explicit NeedleGrids(QWidget* parent) : QWidget(parent) { setMinimumSize(200, 90); }
  NeedleSnapshot data;
  std::vector<PolicyConfig> policies;

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), background_color());
    const QFontMetricsF fm(font());
    if (!data.planted || data.panes.empty()) {
      p.setPen(muted_text_color());
      p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
                 "No needle yet. Type a sentence such as “The secret word is Bethlehem.” into the needle box "
                 "and press Plant; then Ask, now or after the stream has moved on.");
      return;
    }
    // Viridis at five stops: ordered in lightness, read alike by colour-blind eyes and in print.
    QCPColorGradient gradient;
    gradient.setColorStops({{0.0, QColor(68, 1, 84)}, {0.25, QColor(59, 82, 139)}, {0.5, QColor(33, 145, 140)},
                            {0.75, QColor(94, 201, 98)}, {1.0, QColor(253, 231, 37)}});
    const int panes = int(data.panes.size()), L = std::max(1, data.layers), K = std::max(1, data.kv_heads);
    const double gap = 12, title_h = fm.height() + 4;
    const double block_w = (width() - gap * (panes - 1)) / panes;
    for (int i = 0; i < panes; ++i) {
      const NeedlePane& pane = data.panes[size_t(i)];
      const QRectF block(i * (block_w + gap), 0, block_w, height());
      p.setPen(i < int(policies.size()) ? legible_on(policy_color(policies[size_t(i)]), background_color()) : text_color());
      p.drawText(QRectF(block.left(), 0, block.width(), title_h), Qt::AlignCenter,
                 fm.elidedText(i < int(policies.size()) ? short_policy_title(policies[size_t(i)]) : QString(),
                               Qt::ElideRight, block.width()));
      const double w = block.width() / K, h = (block.height() - title_h) / L;
      for (int l = 0; l < L; ++l)
        for (int g = 0; g < K; ++g) {
          const QRectF cell(block.left() + g * w, title_h + l * h, std::max(1.0, w - (w > 4 ? 1 : 0)),
                            std::max(1.0, h - (h > 4 ? 1 : 0)));
          const size_t at = size_t(l) * size_t(K) + size_t(g);
          if (at >= pane.held.size()) {
            p.fillRect(cell, grid_color());
            continue;
          }
          p.fillRect(cell, QColor(gradient.color(pane.held[at], QCPRange(0, 1))));
        }
    }
  }
};

QString needle_sentence(const PolicyConfig& policy, const NeedlePane& pane, int kv_heads) {
  return QString::fromStdString(needle_words(policy_title(policy).toStdString(), pane, kv_heads)).toHtmlEscaped();
}

QString ask_sentence(const NeedlePane& pane) { return QString::fromStdString(ask_words(pane)).toHtmlEscaped(); }

NeedleView::NeedleView(QWidget* parent) : QWidget(parent) {
  summary_ = new QLabel;
  summary_->setObjectName("needle_summary");
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::RichText);
  summary_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  grids_ = new NeedleGrids(this);
  grids_->setToolTip("Each pane's layers (rows) by KV heads (columns): the share of the needle each head holds now "
                     "(yellow: all of it, dark: none)");
  survival_ = make_plot("Needle held since it was planted", "steps since the needle", "share held (all heads)");
  legend_above(survival_);
  recall_ = make_plot("Recall at each ask (lower: better; filled: exact)", "tokens since the needle", "answer NLL (nats)");
  legend_above(recall_);
  auto* plots = new QSplitter(Qt::Horizontal);
  plots->addWidget(grids_);
  plots->addWidget(survival_);
  plots->addWidget(recall_);
  plots->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->addWidget(summary_);
  layout->addWidget(plots, 1);
  setMinimumWidth(200);
}

void NeedleView::restyle() {
  for (QCustomPlot* p : {survival_, recall_}) {
    style_plot(p);
    p->legend->setBrush(Qt::NoBrush);
    p->legend->setBorderPen(Qt::NoPen);
  }
  policies_.clear();
}

void NeedleView::setPolicies(const std::vector<PolicyConfig>& policies) {
  policies_ = policies;
  set_policy_graphs(survival_, policies);
  for (int i = 0; i < survival_->graphCount(); ++i) survival_->graph(i)->setLineStyle(QCPGraph::lsStepLeft);
  set_policy_graphs(recall_, policies);
  for (int i = 0; i < recall_->graphCount(); ++i) {
    QCPGraph* g = recall_->graph(i);
    g->setLineStyle(QCPGraph::lsLine);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 7 * std::max(1.0, ui_scale())));
  }
  // Exact recalls: the same points filled, in a graph of their own per policy.
  for (const PolicyConfig& policy : policies) {
    QCPGraph* exact = recall_->addGraph();
    exact->setLineStyle(QCPGraph::lsNone);
    exact->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, policy_color(policy), 7 * std::max(1.0, ui_scale())));
    exact->removeFromLegend();
  }
  fit_legend(survival_);
  fit_legend(recall_);
}

void NeedleView::draw(const StudioSnapshot& s) {
  if (const auto policies = snapshot_policies(s); policies != policies_) setPolicies(policies);
  const NeedleSnapshot& n = s.needle;
  grids_->data = n;
  grids_->policies = policies_;
  grids_->update();
  if (!n.planted) {
    summary_->setText("<b>Needle</b>: none planted. A needle is a sentence put into the stream; the panes then show "
                      "which heads of each cache still hold it, and Ask has every pane answer a question about it.");
  } else {
    QString text = QString("<b>Needle</b> “%1” · <b>Ask</b> “%2” → “%3”")
                       .arg(QString::fromStdString(n.text).toHtmlEscaped(),
                            QString::fromStdString(n.question).toHtmlEscaped(),
                            QString::fromStdString(n.answer).toHtmlEscaped());
    for (size_t i = 0; i < n.panes.size() && i < policies_.size(); ++i) {
      text += QString("<br><span style='color:%1'>■</span> %2")
                  .arg(legible_on(policy_color(policies_[i]), background_color()).name(), needle_sentence(policies_[i], n.panes[i], n.kv_heads));
      if (const QString ask = ask_sentence(n.panes[i]); !ask.isEmpty()) text += " " + ask;
    }
    summary_->setText(text);
  }
  const size_t panes = policies_.size();
  for (size_t i = 0; i < panes; ++i) {
    const NeedlePane* pane = i < n.panes.size() ? &n.panes[i] : nullptr;
    set_series(survival_->graph(int(i)), pane ? pane->curve : Series{});
    Series all, exact;
    if (pane)
      for (const NeedleAskPoint& a : pane->asks) {
        if (!std::isfinite(a.answer_nll)) continue;
        all.x.push_back(double(a.distance));
        all.y.push_back(a.answer_nll);
        if (a.exact) exact.x.push_back(double(a.distance)), exact.y.push_back(a.answer_nll);
      }
    set_series(recall_->graph(int(i)), all);
    set_series(recall_->graph(int(panes + i)), exact);
  }
  rescale(survival_);
  survival_->yAxis->setRange(0, 1.05);
  rescale(recall_);
  for (QCustomPlot* p : {survival_, recall_}) p->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace h2o::ui
