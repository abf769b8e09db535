#include "app/line_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

#include "app/cairo_canvas.h"

namespace h2o {
namespace {

// The drawing's size in its own units: pixels at scale 1, points in the PDF.
constexpr double kWidth = 820, kHeight = 500;
constexpr double kLeft = 80, kRight = 230, kTop = 48, kBottom = 64;  // margins; the legend sits right
constexpr double kPngScale = 1.5;  // PNG pixels per unit: sharp on a high-density screen too

// Matplotlib's "tab10": distinct on white and to most colour-blind readers.
constexpr double kColors[][3] = {{0.12, 0.47, 0.71}, {1.00, 0.50, 0.05}, {0.17, 0.63, 0.17}, {0.84, 0.15, 0.16},
                                 {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29}, {0.89, 0.47, 0.76}, {0.50, 0.50, 0.50}};

// One axis: its data range and how a value maps onto it (log or linear).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double t(double v) const { return log ? std::log10(v) : v; }
  double fraction(double v) const { return (t(v) - t(lo)) / (t(hi) - t(lo)); }
};

// The range of the finite (and, on a log axis, positive) values, padded by 5% so no marker sits on the frame.
Axis make_axis(const std::vector<double>& values, bool log) {
  Axis a;
  a.log = log;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values)
    if (std::isfinite(v) && (!log || v > 0)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = 1, hi = 10;
  if (lo == hi) lo = log ? lo / 2 : lo - 1, hi = log ? hi * 2 : hi + 1;
  const double pad = (a.t(hi) - a.t(lo)) * 0.05;
  a.lo = log ? std::pow(10, a.t(lo) - pad) : lo - pad;
  a.hi = log ? std::pow(10, a.t(hi) + pad) : hi + pad;
  return a;
}

// Round tick values: 1-2-5 steps on a linear axis (or a log axis spanning
// less than a decade), 1, 2 and 5 times each power of ten on a wider log axis.
std::vector<double> ticks(const Axis& a) {
  std::vector<double> out;
  if (a.log && a.hi / a.lo >= 10) {
    for (int e = int(std::floor(std::log10(a.lo))); e <= int(std::ceil(std::log10(a.hi))); ++e)
      for (double m : {1.0, 2.0, 5.0})
        if (const double v = m * std::pow(10, e); v >= a.lo && v <= a.hi) out.push_back(v);
    return out;
  }
  const double raw = (a.hi - a.lo) / 8, power = std::pow(10, std::floor(std::log10(raw)));
  double step = power * 10;
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) { step = m * power; break; }
  for (double v = std::ceil(a.lo / step) * step; v <= a.hi; v += step) out.push_back(v);
  return out;
}

std::string tick_label(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

void dot(cairo_t* cr, double x, double y) {
  cairo_arc(cr, x, y, 3.5, 0, 2 * std::numbers::pi);
  cairo_fill(cr);
}

struct Frame {
  Axis x, y;
  double left = kLeft, right = kWidth - kRight, top = kTop, bottom = kHeight - kBottom;
  double px(double v) const { return left + x.fraction(v) * (right - left); }
  double py(double v) const { return bottom - y.fraction(v) * (bottom - top); }
  // A log axis has no place for zero or below; NaN marks a point not measured.
  bool shows(double value) const { return std::isfinite(value) && (!y.log || value > 0); }
};

void draw_axes(cairo_t* cr, const Frame& f, const LinePlot& plot) {
  cairo_set_font_size(cr, 12);
  cairo_set_line_width(cr, 1);
  for (double v : ticks(f.y)) {  // light grid lines, labelled on the left
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    stroke_line(cr, f.left, f.py(v), f.right, f.py(v));
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    show_text(cr, tick_label(v), f.left - 6, f.py(v), 1, 0.5);
  }
  for (double v : ticks(f.x)) {
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    stroke_line(cr, f.px(v), f.top, f.px(v), f.bottom);
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    show_text(cr, tick_label(v), f.px(v), f.bottom + 6, 0.5, 0);
  }
  cairo_rectangle(cr, f.left, f.top, f.right - f.left, f.bottom - f.top);
  cairo_stroke(cr);
  cairo_set_font_size(cr, 14);
  show_text(cr, plot.x_title, (f.left + f.right) / 2, kHeight - 12, 0.5, 1);
  cairo_save(cr);
  cairo_translate(cr, 18, (f.top + f.bottom) / 2);
  cairo_rotate(cr, -std::numbers::pi / 2);
  show_text(cr, plot.y_title, 0, 0, 0.5, 0.5);
  cairo_restore(cr);
  cairo_set_font_size(cr, 16);
  show_text(cr, plot.title, kWidth / 2, 14, 0.5, 0);
}

void set_color(cairo_t* cr, size_t i) {
  const double* c = kColors[i % std::size(kColors)];
  cairo_set_source_rgb(cr, c[0], c[1], c[2]);
}

// Each series as a line through its points (broken at a NaN), a dot on each point.
void draw_lines(cairo_t* cr, const Frame& f, const LinePlot& plot) {
  cairo_set_line_width(cr, 2);
  for (size_t i = 0; i < plot.lines.size(); ++i) {
    const PlotLine& line = plot.lines[i];
    set_color(cr, i);
    bool open = false;
    for (size_t k = 0; k < line.x.size() && k < line.y.size(); ++k) {
      if (!f.shows(line.y[k])) {
        open = false;
        continue;
      }
      if (open) cairo_line_to(cr, f.px(line.x[k]), f.py(line.y[k]));
      else cairo_move_to(cr, f.px(line.x[k]), f.py(line.y[k]));
      open = true;
    }
    cairo_stroke(cr);
    for (size_t k = 0; k < line.x.size() && k < line.y.size(); ++k)
      if (f.shows(line.y[k])) dot(cr, f.px(line.x[k]), f.py(line.y[k]));
  }
}

void draw_legend(cairo_t* cr, const LinePlot& plot) {
  cairo_set_font_size(cr, 12);
  const double x = kWidth - kRight + 16;
  for (size_t i = 0; i < plot.lines.size(); ++i) {
    const double y = kTop + 10 + 22 * double(i);
    set_color(cr, i);
    cairo_set_line_width(cr, 2);
    stroke_line(cr, x, y, x + 24, y);
    dot(cr, x + 12, y);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    show_text(cr, plot.lines[i].name, x + 32, y, 0, 0.5);
  }
}

void draw(cairo_t* cr, const LinePlot& plot) {
  std::vector<double> xs, ys;
  for (const PlotLine& line : plot.lines) {
    xs.insert(xs.end(), line.x.begin(), line.x.end());
    ys.insert(ys.end(), line.y.begin(), line.y.end());
  }
  const Frame frame{make_axis(xs, plot.log_x), make_axis(ys, plot.log_y)};
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  draw_axes(cr, frame, plot);
  draw_lines(cr, frame, plot);
  draw_legend(cr, plot);
}

}  // namespace

std::string plot_png(const LinePlot& plot) {
  return render_png({kWidth, kHeight}, kPngScale, [&](cairo_t* cr) { draw(cr, plot); });
}

std::string plot_pdf(const LinePlot& plot) {
  return render_pdf({kWidth, kHeight}, [&](cairo_t* cr) { draw(cr, plot); });
}

}  // namespace h2o
