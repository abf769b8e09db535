#pragma once
// A heatmap drawn with cairo, as PNG or PDF bytes (h2o-cli needle): a grid
// of cells coloured by value on one scale (viridis, dark = lo), labelled
// rows and columns, each cell's value written where it fits, a colour bar,
// and optionally a dashed line after one column (the model's trained context).
#include <string>
#include <vector>

namespace h2o {

struct GridPlot {
  std::string title, x_title, y_title, value_title;
  std::vector<std::string> columns, rows;  // labels along x (left to right) and y (top to bottom)
  std::vector<double> values;              // rows x columns, row-major; NaN: not measured (left blank)
  double lo = 0, hi = 1;                   // the colour scale's ends
  int mark_after_column = -1;              // >= 0: a dashed line on this column's right edge
  std::string mark_label;                  // what the line marks
};

// The files' bytes. Throws Error when cairo fails.
std::string grid_png(const GridPlot& plot);
std::string grid_pdf(const GridPlot& plot);

}  // namespace h2o
