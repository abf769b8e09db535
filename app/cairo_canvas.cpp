#include "app/cairo_canvas.h"

#include <cairo-pdf.h>

#include <memory>

#include "core/base/error.h"

namespace h2o {
namespace {

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

void check(cairo_status_t status, const char* what) {
  if (status != CAIRO_STATUS_SUCCESS) throw Error(std::string("plot: ") + what + ": " + cairo_status_to_string(status));
}

}  // namespace

std::string render_png(CanvasSize size, double scale, const DrawChart& draw) {
  Surface surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, int(size.width * scale), int(size.height * scale)),
      cairo_surface_destroy);
  check(cairo_surface_status(surface.get()), "PNG surface");
  {
    Context cr(cairo_create(surface.get()), cairo_destroy);
    cairo_scale(cr.get(), scale, scale);
    draw(cr.get());
    check(cairo_status(cr.get()), "drawing");
  }
  std::string bytes;
  check(cairo_surface_write_to_png_stream(surface.get(), append, &bytes), "PNG encoding");
  return bytes;
}

std::string render_pdf(CanvasSize size, const DrawChart& draw) {
  std::string bytes;
  Surface surface(cairo_pdf_surface_create_for_stream(append, &bytes, size.width, size.height), cairo_surface_destroy);
  check(cairo_surface_status(surface.get()), "PDF surface");
  {
    Context cr(cairo_create(surface.get()), cairo_destroy);
    draw(cr.get());
    check(cairo_status(cr.get()), "drawing");
  }
  cairo_surface_finish(surface.get());  // the PDF's last bytes are written here
  check(cairo_surface_status(surface.get()), "PDF writing");
  return bytes;
}

void show_text(cairo_t* cr, const std::string& text, double x, double y, double align_x, double align_y) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text.c_str(), &e);
  cairo_move_to(cr, x - e.width * align_x - e.x_bearing, y - e.height * align_y - e.y_bearing);
  cairo_show_text(cr, text.c_str());
}

void stroke_line(cairo_t* cr, double x0, double y0, double x1, double y1) {
  cairo_move_to(cr, x0, y0);
  cairo_line_to(cr, x1, y1);
  cairo_stroke(cr);
}

}  // namespace h2o
