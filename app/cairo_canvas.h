#pragma once
// What every cairo chart of h2o-cli shares (line_plot.cpp, grid_plot.cpp):
// one drawing function rendered to PNG or PDF bytes, and text placed by its
// alignment.
#include <cairo.h>

#include <functional>
#include <string>

namespace h2o {

// The drawing's size in its own units (pixels at scale 1, points in the PDF).
struct CanvasSize {
  double width = 0, height = 0;
};

using DrawChart = std::function<void(cairo_t*)>;

// The files' bytes; the PNG at `scale` pixels a unit. Throws Error when cairo fails (out of memory).
std::string render_png(CanvasSize size, double scale, const DrawChart& draw);
std::string render_pdf(CanvasSize size, const DrawChart& draw);

// `text` placed so that the point (x, y) sits at fractions (align_x, align_y) of its box.
void show_text(cairo_t* cr, const std::string& text, double x, double y, double align_x, double align_y);
void stroke_line(cairo_t* cr, double x0, double y0, double x1, double y1);

}  // namespace h2o
