#include "theme.h"

#include <QApplication>
#include <QIcon>
#include <QPalette>
#include <QStringList>
#include <QStyleFactory>
#include <qcustomplot.h>

static void init_h2o_resources() { Q_INIT_RESOURCE(h2o_studio); }

namespace h2o::ui {

static QString text(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QColor policy_color(const PolicyConfig& policy) { return QColor(text(policy.unit().color)); }
QString policy_title(const PolicyConfig& policy) { return text(policy.unit().title); }
QString short_policy_title(const PolicyConfig& policy) { return text(policy.unit().short_title); }

// The names every kind that keeps tokens by score gives them: "heavy hitter / attended now".
static QString scored_roles() {
  QStringList roles;
  for (const PolicyUnit* unit : policy_units())
    if (PolicyConfig::named(unit->name).rule().by_score > 0) roles << text(unit->scored_role);
  roles.removeDuplicates();
  return roles.join(" / ");
}

QString fate_legend_name(Fate fate) {
  if (fate == Fate::Unborn) return "new";
  return fate == Fate::Heavy ? scored_roles() : QString(fate_name(fate));
}

QColor fate_color(Fate fate) {
  switch (fate) {
    case Fate::Unborn: return QColor("#ffffff");
    case Fate::Evicted: return QColor("#5f6b73");
    case Fate::Cached: return QColor("#c9d1d6");
    case Fate::Heavy: return QColor("#ffc940");
    case Fate::Recent: return QColor("#63c9f2");
    case Fate::Sink: return QColor("#e57ae5");
  }
  return Qt::white;
}

QString fate_tooltip(Fate fate, const PolicyConfig* policy) {
  switch (fate) {
    case Fate::Unborn: return "just generated, not yet in any cache";
    case Fate::Evicted: return "evicted: no longer in the cache of the shown layer/head";
    case Fate::Cached: return "cached, in no special role (the full cache keeps everything)";
    case Fate::Heavy:
      if (!policy) return scored_roles() + ": kept for its attention score";
      return text(policy->unit().scored_role) + ": kept for its attention score (" + policy_title(*policy) + ": " +
             text(policy->unit().description) + ")";
    case Fate::Recent: return "recent: inside the policy's window of latest tokens";
    case Fate::Sink: return "attention sink: one of the first tokens, always kept";
  }
  return {};
}

QColor background_color() { return QColor("#1b2024"); }
QColor text_color() { return QColor("#dfe5e8"); }
QColor grid_color() { return QColor("#2e363c"); }

void apply_theme(QApplication& app) {
  init_h2o_resources();
  app.setStyle(QStyleFactory::create("Fusion"));
  QPalette p;
  const QColor window("#23292e"), base("#1b2024"), button("#2c3338"), text = text_color();
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, QColor("#30383e"));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, button);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Highlight, QColor("#3d7eaa"));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor("#7d878d"));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor("#6c757a"));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor("#6c757a"));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor("#6c757a"));
  app.setPalette(p);
  app.setWindowIcon(QIcon(":/h2o/icons/h2o-studio.svg"));
  app.setStyleSheet(
      "QToolTip { color: #dfe5e8; background: #30383e; border: 1px solid #4a555c; }"
      "QGroupBox { border: 1px solid #3a4348; border-radius: 4px; margin-top: 14px; padding-top: 4px; }"
      "QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 3px; color: #9fb3bf; }"
      "QSplitter::handle { background: #2a3136; }"
      "QTabWidget::pane { border: 1px solid #3a4348; }");
}

void style_plot(QCustomPlot* plot) {
  plot->setBackground(background_color());
  plot->setNoAntialiasingOnDrag(true);
  QFont font = plot->font();
  font.setPointSizeF(8);
  for (QCPAxis* axis : plot->axisRect()->axes()) {
    axis->setBasePen(QPen(QColor("#6c787f")));
    axis->setTickPen(QPen(QColor("#6c787f")));
    axis->setSubTickPen(QPen(QColor("#4c565c")));
    axis->setTickLabelColor(text_color());
    axis->setLabelColor(text_color());
    axis->setTickLabelFont(font);
    axis->setLabelFont(font);
    axis->grid()->setPen(QPen(grid_color(), 1, Qt::DotLine));
    axis->grid()->setSubGridVisible(false);
  }
  plot->legend->setBrush(QColor(30, 36, 40, 210));
  plot->legend->setBorderPen(QPen(QColor("#4a555c")));
  plot->legend->setTextColor(text_color());
  plot->legend->setFont(font);
}

}  // namespace h2o::ui
