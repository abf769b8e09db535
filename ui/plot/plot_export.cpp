#include "ui/plot/plot_export.h"

#include <QPageLayout>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>
#include <filesystem>
#include <qcustomplot.h>

#include "core/base/error.h"
#include "core/base/safe_output.h"
#include "ui/plot/plot_helpers.h"

namespace h2o::ui {

const char* plot_format_suffix(PlotFormat format) {
  switch (format) {
    case PlotFormat::Png: return "png";
    case PlotFormat::Pdf: return "pdf";
    case PlotFormat::Svg: return "svg";
  }
  return "";
}

QString file_stem(const QString& title) {
  QString out;
  for (QChar c : title.toLower()) {
    if (c.isLetterOrNumber()) out += c;
    else if (!out.endsWith('-')) out += '-';
  }
  while (out.endsWith('-')) out.chop(1);
  return out.isEmpty() ? "plot" : out;
}

// QCustomPlot writes straight to a file name: give it a temporary one beside
// the destination and rename it over the destination when it succeeded.
// Where a file at `path` is written: refused (one line naming it) for a folder,
// a device, a pipe or a socket — a rename or QSaveFile would replace it with a
// plain file (`--screenshot /dev/null`, run as root, once replaced /dev/null) —
// and a symbolic link's target, so the link stays a link. The CLI's outputs ask the same.
static QString target_of(const QString& path) {
  return QString::fromStdString(output_file_target(path.toStdString()));
}

static void save_via_temp(const QString& given, const std::function<bool(const QString&)>& write) {
  const QString path = target_of(given);
  const QString temp = path + ".tmp-" + QString::number(QCoreApplication::applicationPid());
  if (!write(temp)) {
    QFile::remove(temp);
    throw Error(path.toStdString() + ": could not write the plot");
  }
  std::error_code ec;
  std::filesystem::rename(temp.toStdString(), path.toStdString(), ec);
  if (ec) {
    QFile::remove(temp);
    throw Error(path.toStdString() + ": " + ec.message());
  }
}

// While it lives: the plot's layouts are the file's (see keep_cells_at_least), and the element
// meant for exported files only (a raster's fate legend) sits in the bottom row.
class ExportDecorations {
 public:
  explicit ExportDecorations(QCustomPlot* plot) : plot_(plot) {
    plot->setProperty("h2o_exporting", true);
    // The window's cell plots fix their room under the cells (fix_vertical_room); a file lays out
    // its own, with the axis labels it adds.
    for (QCPLayoutElement* e : cell_frames(plot)) {
      margins_.push_back({e, e->autoMargins(), e->margins()});
      e->setAutoMargins(QCP::msAll);
    }
    // A file names its x axis where the window leaves it to the title (a raster's positions).
    x_label_ = plot->xAxis->label();
    x_ticks_ = plot->xAxis->tickLabels();
    if (const QString label = plot->property("h2o_export_x_label").toString(); !label.isEmpty()) {
      plot->xAxis->setLabel(label);
      plot->xAxis->setTickLabels(true);
    }
    // A text item that reads otherwise in a file (a raster's "detail below", which has no below there).
    for (int i = 0; i < plot->itemCount(); ++i)
      if (auto* t = qobject_cast<QCPItemText*>(plot->item(i)); t && t->property("h2o_export_text").isValid()) {
        texts_.push_back({t, t->text()});
        t->setText(t->property("h2o_export_text").toString());
      }
    shown_ = qobject_cast<QCPLayoutElement*>(plot->property(kExportOnly).value<QObject*>());
    if (!shown_) return;
    QCPLayoutGrid* layout = plot->plotLayout();
    layout->addElement(layout->rowCount(), 0, shown_);
    layout->setRowStretchFactor(layout->rowCount() - 1, 0.001);
    shown_->setVisible(true);
  }
  ~ExportDecorations() {
    plot_->setProperty("h2o_exporting", false);
    for (const Margins& m : margins_) {
      m.element->setAutoMargins(m.sides);
      m.element->setMargins(m.margins);
    }
    for (const auto& [item, text] : texts_) item->setText(text);
    plot_->xAxis->setLabel(x_label_);
    plot_->xAxis->setTickLabels(x_ticks_);
    if (shown_) park_export_only(plot_, shown_);
    plot_->replot(QCustomPlot::rpQueuedReplot);
  }

 private:
  QCustomPlot* plot_;
  std::vector<std::pair<QCPItemText*, QString>> texts_;  // with their window's words
  struct Margins {
    QCPLayoutElement* element;
    QCP::MarginSides sides;
    QMargins margins;
  };
  std::vector<Margins> margins_;
  QCPLayoutElement* shown_ = nullptr;
  QString x_label_;
  bool x_ticks_ = true;
};

// The plot as vectors on a page of exactly w x h of the window's pixels. QCustomPlot::savePdf draws
// the layout made for the window's width onto a wider page: a title widened for the file started
// left of the page and ran past its right edge (cut at both ends, where the PNG was whole).
static bool write_pdf(QCustomPlot* plot, const QString& path, int w, int h) {
  QPdfWriter pdf(path);
  const double dpi = plot->logicalDpiX();
  pdf.setResolution(int(dpi));
  pdf.setPageLayout(QPageLayout(QPageSize(QSizeF(w, h) * (72.0 / dpi), QPageSize::Point, QString(), QPageSize::ExactMatch),
                                QPageLayout::Portrait, QMarginsF()));
  pdf.setCreator("H2O Studio");
  pdf.setTitle(plot->objectName());
  QCPPainter painter;
  if (!painter.begin(&pdf)) return false;
  painter.setMode(QCPPainter::pmVectorized);
  plot->toPainter(&painter, w, h);
  return painter.end();
}

static void lay_out(QCustomPlot* plot, const QRect& viewport) {
  plot->setViewport(viewport);
  for (auto phase : {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
    plot->plotLayout()->update(phase);
}

// How many pixels the widest title lacks with the plot laid out at w x h: a colour scale's column
// widens with the plot too, so the title's column gets only part of the width added for it (the
// heatmap's file title started left of the page).
static int title_shortfall(QCustomPlot* plot, int w, int h) {
  const QRect window = plot->viewport();
  lay_out(plot, QRect(0, 0, w, h));
  int short_by = 0;
  for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
    if (auto* t = qobject_cast<QCPTextElement*>(e); t && t->visible() && !t->text().isEmpty())
      short_by = std::max(short_by, int(std::ceil(QFontMetricsF(t->font()).horizontalAdvance(t->text()))) + 8 - t->rect().width());
  lay_out(plot, window);
  return short_by;
}

constexpr double kPngScale = 2.0;

void save_plot(QCustomPlot* plot, const QString& path, PlotFormat format) {
  const ExportDecorations decorations(plot);
  const ExportTitles titles(plot);
  // Wide enough for the file's whole title (policy, layer, head, step), measured where it is drawn.
  int w = std::max({plot->width(), 640, titles.widthNeeded()});
  const int h = std::max(plot->height(), 400);
  for (int tries = 0; tries < 4; ++tries) {
    const int short_by = title_shortfall(plot, w, h);
    if (short_by <= 0) break;
    w += short_by;
  }
  switch (format) {
    case PlotFormat::Png:
      // At twice the layout's pixels (a 640x400 plot makes a 1280x800 file), as a slide or a
      // high-density screen shows it; the vector formats need no such thing.
      save_via_temp(path, [&](const QString& temp) { return plot->savePng(temp, w, h, kPngScale); });
      return;
    case PlotFormat::Pdf:
      save_via_temp(path, [&](const QString& temp) { return write_pdf(plot, temp, w, h); });
      return;
    case PlotFormat::Svg: {
      QSaveFile file(target_of(path));
      if (!file.open(QIODevice::WriteOnly)) throw Error(path.toStdString() + ": cannot create the file");
      QSvgGenerator svg;
      svg.setOutputDevice(&file);
      svg.setSize(QSize(w, h));
      svg.setViewBox(QRect(0, 0, w, h));
      svg.setTitle(plot->objectName());
      svg.setDescription("H2O Studio plot");
      QCPPainter painter;
      if (!painter.begin(&svg)) throw Error(path.toStdString() + ": cannot paint the SVG");
      plot->toPainter(&painter, w, h);
      painter.end();
      if (!file.commit()) throw Error(path.toStdString() + ": " + file.errorString().toStdString());
      return;
    }
  }
}

void save_widget_png(QWidget* widget, const QString& path) {
  QSaveFile file(target_of(path));
  const QPixmap pixmap = widget->grab();
  if (!file.open(QIODevice::WriteOnly) || !pixmap.save(&file, "PNG") || !file.commit())
    throw Error(path.toStdString() + ": could not write the screenshot");
}

}  // namespace h2o::ui
