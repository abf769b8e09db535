#include "app/grid_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "app/cairo_canvas.h"

namespace h2o {
namespace {

constexpr CanvasSize kSize{820, 560};
constexpr double kLeft = 90, kRight = 120, kTop = 52, kBottom = 70;  // margins; the colour bar sits right
constexpr double kPngScale = 1.5;

// Viridis at five stops, interpolated: ordered in lightness, readable in grey and to colour-blind readers.
void set_scale_color(cairo_t* cr, double t) {
  static constexpr double stops[5][3] = {
      {0.267, 0.005, 0.329}, {0.231, 0.322, 0.545}, {0.129, 0.569, 0.549}, {0.369, 0.788, 0.384}, {0.993, 0.906, 0.144}};
  t = std::clamp(t, 0.0, 1.0) * 4;
  const int i = std::min(3, int(t));
  const double f = t - i;
  cairo_set_source_rgb(cr, stops[i][0] + f * (stops[i + 1][0] - stops[i][0]),
                       stops[i][1] + f * (stops[i + 1][1] - stops[i][1]),
                       stops[i][2] + f * (stops[i + 1][2] - stops[i][2]));
}

double scale_of(const GridPlot& p, double v) { return p.hi > p.lo ? (v - p.lo) / (p.hi - p.lo) : 0.5; }

std::string value_label(double v) {
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(v) >= 100 ? "%.0f" : std::fabs(v) >= 10 ? "%.1f" : "%.2f", v);
  return text;
}

// Labels along an axis, every one where they fit, else every k-th.
size_t label_step(double cell, double needed) {
  return std::max<size_t>(1, size_t(std::ceil(needed / std::max(cell, 1.0))));
}

struct Cells {
  double left, top, w, h;
};

void draw_cells(cairo_t* cr, const GridPlot& p, const Cells& c) {
  const size_t cols = p.columns.size();
  cairo_set_font_size(cr, std::clamp(c.h * 0.45, 7.0, 12.0));
  const bool values = c.w >= 34 && c.h >= 14;
  for (size_t r = 0; r < p.rows.size(); ++r)
    for (size_t k = 0; k < cols; ++k) {
      const double v = r * cols + k < p.values.size() ? p.values[r * cols + k] : NAN;
      const double x = c.left + double(k) * c.w, y = c.top + double(r) * c.h;
      if (!std::isfinite(v)) {
        cairo_set_source_rgb(cr, 0.93, 0.93, 0.93);
        cairo_rectangle(cr, x, y, c.w, c.h);
        cairo_fill(cr);
        continue;
      }
      const double t = scale_of(p, v);
      set_scale_color(cr, t);
      cairo_rectangle(cr, x, y, c.w, c.h);
      cairo_fill(cr);
      if (!values) continue;
      if (t > 0.55) cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
      else cairo_set_source_rgb(cr, 1, 1, 1);
      show_text(cr, value_label(v), x + c.w / 2, y + c.h / 2, 0.5, 0.5);
    }
}

void draw_labels(cairo_t* cr, const GridPlot& p, const Cells& c) {
  cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
  cairo_set_font_size(cr, 12);
  const double bottom = c.top + c.h * double(p.rows.size());
  for (size_t k = 0; k < p.columns.size(); k += label_step(c.w, 30))
    show_text(cr, p.columns[k], c.left + (double(k) + 0.5) * c.w, bottom + 6, 0.5, 0);
  for (size_t r = 0; r < p.rows.size(); r += label_step(c.h, 14))
    show_text(cr, p.rows[r], c.left - 6, c.top + (double(r) + 0.5) * c.h, 1, 0.5);
  cairo_set_font_size(cr, 14);
  show_text(cr, p.x_title, c.left + c.w * double(p.columns.size()) / 2, kSize.height - 14, 0.5, 1);
  cairo_save(cr);
  cairo_translate(cr, 20, c.top + c.h * double(p.rows.size()) / 2);
  cairo_rotate(cr, -std::numbers::pi / 2);
  show_text(cr, p.y_title, 0, 0, 0.5, 0.5);
  cairo_restore(cr);
  cairo_set_font_size(cr, 16);
  show_text(cr, p.title, kSize.width / 2, 16, 0.5, 0);
}

void draw_mark(cairo_t* cr, const GridPlot& p, const Cells& c) {
  if (p.mark_after_column < 0 || p.mark_after_column >= int(p.columns.size())) return;
  const double x = c.left + c.w * double(p.mark_after_column + 1);
  const double bottom = c.top + c.h * double(p.rows.size());
  const double dash[] = {6, 4};
  cairo_set_source_rgb(cr, 0.85, 0.1, 0.1);
  cairo_set_line_width(cr, 2.5);
  cairo_set_dash(cr, dash, 2, 0);
  stroke_line(cr, x, c.top - 8, x, bottom + 2);
  cairo_set_dash(cr, nullptr, 0, 0);
  cairo_set_font_size(cr, 12);
  show_text(cr, p.mark_label, x, c.top - 10, 0.5, 1);
}

void draw_color_bar(cairo_t* cr, const GridPlot& p) {
  const double x = kSize.width - kRight + 24, top = kTop, bottom = kSize.height - kBottom, w = 18;
  for (int i = 0; i < 100; ++i) {
    set_scale_color(cr, 1 - i / 99.0);
    cairo_rectangle(cr, x, top + (bottom - top) * i / 100.0, w, (bottom - top) / 100.0 + 0.5);
    cairo_fill(cr);
  }
  cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
  cairo_set_font_size(cr, 11);
  show_text(cr, value_label(p.hi), x + w + 4, top, 0, 0.5);
  show_text(cr, value_label(p.lo), x + w + 4, bottom, 0, 0.5);
  cairo_save(cr);
  cairo_translate(cr, x + w + 40, (top + bottom) / 2);
  cairo_rotate(cr, -std::numbers::pi / 2);
  show_text(cr, p.value_title, 0, 0, 0.5, 0.5);
  cairo_restore(cr);
}

void draw(cairo_t* cr, const GridPlot& p) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  const double cols = double(std::max<size_t>(1, p.columns.size())), rows = double(std::max<size_t>(1, p.rows.size()));
  const Cells c{kLeft, kTop, (kSize.width - kLeft - kRight) / cols, (kSize.height - kTop - kBottom) / rows};
  draw_cells(cr, p, c);
  draw_labels(cr, p, c);
  draw_mark(cr, p, c);
  draw_color_bar(cr, p);
}

}  // namespace

std::string grid_png(const GridPlot& plot) {
  return render_png(kSize, kPngScale, [&](cairo_t* cr) { draw(cr, plot); });
}

std::string grid_pdf(const GridPlot& plot) {
  return render_pdf(kSize, [&](cairo_t* cr) { draw(cr, plot); });
}

}  // namespace h2o
