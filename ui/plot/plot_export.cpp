#include "ui/plot/plot_export.h"

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
    plot_->xAxis->setLabel(x_label_);
    plot_->xAxis->setTickLabels(x_ticks_);
    if (shown_) park_export_only(plot_, shown_);
    plot_->replot(QCustomPlot::rpQueuedReplot);
  }

 private:
  QCustomPlot* plot_;
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

void save_plot(QCustomPlot* plot, const QString& path, PlotFormat format) {
  const ExportDecorations decorations(plot);
  const ExportTitles titles(plot);
  // Wide enough for the file's whole title (policy, layer, head, step).
  const int w = std::max({plot->width(), 640, titles.widthNeeded()}), h = std::max(plot->height(), 400);
  switch (format) {
    case PlotFormat::Png:
      save_via_temp(path, [&](const QString& temp) { return plot->savePng(temp, w, h); });
      return;
    case PlotFormat::Pdf:
      save_via_temp(path, [&](const QString& temp) { return plot->savePdf(temp, w, h); });
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
