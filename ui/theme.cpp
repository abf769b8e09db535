#include "theme.h"

#include <QApplication>
#include <QIcon>
#include <QPalette>
#include <QStyleFactory>
#include <qcustomplot.h>

static void init_h2o_resources() { Q_INIT_RESOURCE(h2o_studio); }

namespace h2o::ui {

QColor policy_color(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::Full: return QColor("#6fa8dc");
    case PolicyKind::Streaming: return QColor("#f28e2b");
    case PolicyKind::H2O: return QColor("#59c16f");
  }
  return Qt::white;
}

QString policy_title(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::Full: return "Full cache";
    case PolicyKind::Streaming: return "StreamingLLM";
    case PolicyKind::H2O: return "H2O";
  }
  return "?";
}

QString short_policy_title(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::Full: return "Full";
    case PolicyKind::Streaming: return "Streaming";
    case PolicyKind::H2O: return "H2O";
  }
  return "?";
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

QString fate_tooltip(Fate fate) {
  switch (fate) {
    case Fate::Unborn: return "just generated, not yet in any cache";
    case Fate::Evicted: return "evicted: no longer in the cache of the shown layer/head";
    case Fate::Cached: return "cached (the full cache keeps everything)";
    case Fate::Heavy: return "heavy hitter: kept by H2O for its accumulated attention";
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
