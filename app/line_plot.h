#pragma once
// A line chart drawn with cairo, as PNG or PDF bytes from the same drawing
// code: one line per series with a marker at each point, axis titles, a
// title and a legend. Only what eval's stress test plots needs (h2o-cli has
// no Qt; the desktop app draws its own charts with QCustomPlot).
#include <string>
#include <vector>

namespace h2o {

struct PlotLine {
  std::string name;          // the legend's entry
  std::vector<double> x, y;  // a NaN y leaves a gap
};

struct LinePlot {
  std::string title, x_title, y_title;
  bool log_x = false, log_y = false;
  std::vector<PlotLine> lines;
};

// The files' bytes. Throws Error when cairo fails (out of memory).
std::string plot_png(const LinePlot& plot);
std::string plot_pdf(const LinePlot& plot);

}  // namespace h2o
