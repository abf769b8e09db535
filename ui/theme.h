#pragma once
// One palette for the whole app: a dark Fusion theme, one colour per policy
// (its unit's own, the same in panes, curves and legends) and one per token fate.
#include <QColor>
#include <QString>

#include "core/policy/fate.h"
#include "core/policy/policy.h"

class QApplication;
class QCustomPlot;

namespace h2o::ui {

QColor policy_color(const PolicyConfig& policy);
QString policy_title(const PolicyConfig& policy);        // "Full cache", "StreamingLLM", "H2O", "TOVA"
QString short_policy_title(const PolicyConfig& policy);  // "Full", "Streaming", ...: for crowded legends
QColor fate_color(Fate fate);
// What a fate means (Heavy in the words of the policy given, or of every kind that keeps by score).
QString fate_tooltip(Fate fate, const PolicyConfig* policy = nullptr);
// The legend's name of a fate: "heavy hitter / attended now" for Heavy, across every kind.
QString fate_legend_name(Fate fate);

QColor background_color();  // plots' background
QColor text_color();
QColor grid_color();

// Fusion style, dark palette, application icon; registers the resources.
void apply_theme(QApplication& app);
// Dark axes, grid and fonts for one plot.
void style_plot(QCustomPlot* plot);

}  // namespace h2o::ui
