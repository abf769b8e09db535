#pragma once
// Right-click on any plot: save it as PNG, PDF or SVG (a file dialog asks
// where). The File menu exports every plot at once; this is the one-plot way.
#include <QString>

class QCustomPlot;

namespace h2o::ui {

// `stem` names the suggested file ("h2o-heatmap" -> h2o-heatmap.png).
void add_export_menu(QCustomPlot* plot, const QString& stem);

}  // namespace h2o::ui
