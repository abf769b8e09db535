#pragma once
// One palette for the whole app: a dark Fusion theme, one colour per policy
// (the same in panes, curves and legends) and one per token fate.
#include <QColor>
#include <QString>

#include "core/analytics.h"
#include "core/cache_policy.h"

class QApplication;
class QCustomPlot;

namespace h2o::ui {

QColor policy_color(PolicyKind kind);
QString policy_title(PolicyKind kind);  // "Full cache", "StreamingLLM", "H2O"
QString short_policy_title(PolicyKind kind);  // "Full", "Streaming", "H2O": for crowded legends
QColor fate_color(Fate fate);
QString fate_tooltip(Fate fate);

QColor background_color();  // plots' background
QColor text_color();
QColor grid_color();

// Fusion style, dark palette, application icon; registers the resources.
void apply_theme(QApplication& app);
// Dark axes, grid and fonts for one plot.
void style_plot(QCustomPlot* plot);

}  // namespace h2o::ui
