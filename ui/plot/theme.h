#pragma once
// One palette for the whole app: a dark theme for screens and a light one for
// projectors and print, one colour per policy (its unit's own, the same in
// panes, curves and legends) and one per token fate in each theme, a scale
// for fonts and lines (presentation mode), and icons drawn in the theme's
// text colour so that they show on either background.
#include <QColor>
#include <QIcon>
#include <QString>

#include "core/policy/fate.h"
#include "core/policy/policy.h"

class QApplication;
class QCPColorGradient;
class QCustomPlot;

namespace h2o::ui {

enum class ThemeKind { Dark, Light };
ThemeKind theme_from_name(const QString& name, bool* ok = nullptr);  // "dark", "light"
QString theme_name(ThemeKind kind);

QColor policy_color(const PolicyConfig& policy);
QString policy_title(const PolicyConfig& policy);        // "Full cache", "StreamingLLM", "H2O", "TOVA"
QString short_policy_title(const PolicyConfig& policy);  // "Full", "Streaming", ...: for crowded legends
QColor fate_color(Fate fate);
// A raster cell's colour (evicted cells recede, unborn ones are the background).
QColor raster_color(Fate fate);
// What a fate means (Heavy in the words of the policy given, or of every kind that keeps by score).
QString fate_tooltip(Fate fate, const PolicyConfig* policy = nullptr);
// The legend's name of a fate: "heavy hitter (H2O) / attended now (TOVA)" for Heavy, across every kind.
QString fate_legend_name(Fate fate);

ThemeKind current_theme();
double ui_scale();          // 1: normal; presentation mode draws fonts and lines larger
QColor background_color();  // plots' background
QColor text_color();
// `color`, or where it would not read on `ground` (dark grey on dark), moved halfway to the text colour.
QColor legible_on(const QColor& color, const QColor& ground);
QColor muted_text_color();  // captions, secondary numbers
QColor grid_color();
QColor axis_color();
QColor warning_color();     // banners, stopped sessions
QColor marker_color();      // the trained-context marker
// The heatmaps' colours, from no attention to the most (NaN: a key the head does not hold).
QCPColorGradient attention_gradient();

enum class IconKind { Play, Pause, StepForward, StepBack, Reset, Live, Open, Save, Report, Fullscreen };
// Drawn in the current theme's text colour (call again after a theme change).
QIcon theme_icon(IconKind kind);

// Fusion style, the theme's palette and style sheet, fonts at `scale`, the
// application icon; registers the resources. May be called again to switch.
void apply_theme(QApplication& app, ThemeKind kind = ThemeKind::Dark, double scale = 1.0);
// Axes, grid, fonts and pens of one plot in the current theme and scale.
void style_plot(QCustomPlot* plot);
// A point size scaled for the current presentation scale.
double scaled_pt(double pt);

}  // namespace h2o::ui
