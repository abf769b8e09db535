// The window's part of the needle (docs/STUDIO.md, "The needle"): planting
// one (the transport bar's box, the Needle menu, --needle), asking for it
// (the Ask action, --ask-every) — both run on the worker — and its menu.
#include <QAction>
#include <QInputDialog>
#include <QMenu>
#include <QMenuBar>

#include "ui/shell/main_window.h"
#include "ui/shell/transport_bar.h"
#include "ui/views/needle_view.h"

namespace h2o::ui {

void MainWindow::plantNeedle(const QString& text, const QString& question, const QString& answer) {
  onWorker([w = worker_, text, question, answer] { w->plantNeedle(text, question, answer); });
  showTab("needle");
}

void MainWindow::askNeedle() {
  onWorker([w = worker_] { w->askNeedle(); });
  showTab("needle");
}

QMenu* MainWindow::buildNeedleMenu() {
  plant_ = new QAction("Plant a needle…", this);
  plant_->setObjectName("plant_needle");
  plant_->setShortcut(QKeySequence("Ctrl+Shift+N"));
  plant_->setToolTip("Put a sentence into every pane's stream when the current turn ends (Ctrl+Shift+N)");
  connect(plant_, &QAction::triggered, this, [this] {
    bool ok = false;
    const QString text = QInputDialog::getText(this, "Plant a needle",
                                               "A sentence for every pane's stream (“The X is Y” is asked back as "
                                               "“What is the X? The X is” → “Y”):",
                                               QLineEdit::Normal, "The secret word is Bethlehem.", &ok);
    if (ok && !text.trimmed().isEmpty()) plantNeedle(text.trimmed());
  });
  ask_ = new QAction("Ask", this);
  ask_->setObjectName("ask_needle");
  ask_->setShortcut(QKeySequence(Qt::Key_K));
  ask_->setToolTip("Ask for the needle (K): after the next step every pane answers from a copy of its cache as it "
                   "is; the live stream goes on untouched");
  connect(ask_, &QAction::triggered, this, &MainWindow::askNeedle);
  addAction(ask_);  // its key works wherever the focus is
  QMenu* menu = menuBar()->addMenu("&Needle");
  menu->setObjectName("needle_menu");
  menu->addActions({plant_, ask_});
  return menu;
}

}  // namespace h2o::ui
