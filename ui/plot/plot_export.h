#pragma once
// Saving plots and the window, each file atomically (written under a
// temporary name, then renamed over the destination): PNG and PDF through
// QCustomPlot's own savers, SVG through QSvgGenerator painting the plot.
#include <QString>

class QCustomPlot;
class QWidget;

namespace h2o::ui {

enum class PlotFormat { Png, Pdf, Svg };
const char* plot_format_suffix(PlotFormat format);  // "png", "pdf", "svg"

// Throws h2o::Error naming the file on failure.
void save_plot(QCustomPlot* plot, const QString& path, PlotFormat format);
// A screenshot of a widget as PNG (QWidget::grab).
void save_widget_png(QWidget* widget, const QString& path);
// "KV memory" -> "kv-memory"
QString file_stem(const QString& title);

}  // namespace h2o::ui
