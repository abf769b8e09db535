#include "ui/plot/plot_context_menu.h"

#include <QFileDialog>
#include <QMenu>
#include <QMessageBox>
#include <qcustomplot.h>

#include "ui/plot/plot_export.h"

namespace h2o::ui {

void add_export_menu(QCustomPlot* plot, const QString& stem) {
  plot->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot, stem](const QPoint& at) {
    QMenu menu(plot);
    for (PlotFormat format : {PlotFormat::Png, PlotFormat::Pdf, PlotFormat::Svg}) {
      const QString suffix = plot_format_suffix(format);
      menu.addAction(QString("Save plot as %1…").arg(suffix.toUpper()), plot, [plot, stem, format, suffix] {
        const QString path = QFileDialog::getSaveFileName(plot, "Save the plot", stem + "." + suffix,
                                                          suffix.toUpper() + " (*." + suffix + ")");
        if (path.isEmpty()) return;
        try {
          save_plot(plot, path, format);
        } catch (const std::exception& e) {
          QMessageBox::warning(plot, "H2O Studio", QString::fromUtf8(e.what()));
        }
      });
    }
    menu.exec(plot->mapToGlobal(at));
  });
}

}  // namespace h2o::ui
