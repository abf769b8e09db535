// The Help menu: Overview of the window (F1), a guided look at each part in
// place (window_tour.h); Keyboard shortcuts, every key the window takes, read
// from its actions so the list cannot drift from them; About, with the version.
#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QVBoxLayout>
#include <functional>
#include <set>

#include "core/base/version.h"
#include "ui/shell/banner.h"
#include "ui/shell/main_window.h"
#include "ui/shell/pane_area.h"
#include "ui/shell/transport_bar.h"
#include "ui/shell/window_tour.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/policy_pane.h"
#include "ui/views/raster_plot.h"
#include "ui/views/sparsity_meter.h"
#include "ui/views/token_flow_view.h"

namespace h2o::ui {

void MainWindow::buildHelpMenu() {
  QMenu* help = menuBar()->addMenu("&Help");
  QAction* overview = help->addAction("Overview of the window");
  overview->setObjectName("overview");
  overview->setShortcut(QKeySequence::HelpContents);  // F1
  connect(overview, &QAction::triggered, this, &MainWindow::showOverview);
  QAction* keys = help->addAction("Keyboard shortcuts");
  keys->setObjectName("shortcuts");
  keys->setShortcut(QKeySequence("Ctrl+/"));
  connect(keys, &QAction::triggered, this, &MainWindow::showShortcuts);
  QAction* about = help->addAction("About H2O Studio");
  about->setObjectName("about");
  connect(about, &QAction::triggered, this, [this] {
    QMessageBox::about(
        this, "About H2O Studio",
        QString("<h3>H2O Studio %1</h3>"
                "<p>KV-cache eviction made visible: the full cache, StreamingLLM, H2O and TOVA side by side "
                "on the same stream of prompts.</p>"
                "<p>Open a model with File ▸ Open model… or by dropping it onto the window; replay a run "
                "with File ▸ Open recording…. The CUDA backend (Controls ▸ Device: cuda) runs where an "
                "NVIDIA GPU and the CUDA runtime are installed; otherwise the app says so and runs on the CPU.</p>"
                "<p>Help ▸ Overview of the window (F1) names each part of the window where it is.</p>"
                "<p>Qt %2. The command line: <tt>h2o-cli --help</tt>.</p>")
            .arg(QString::fromUtf8(version()), QString::fromUtf8(qVersion())));
  });
}

std::vector<TourStop> MainWindow::tourStops() const {
  std::vector<TourStop> stops = {
      {pane_area_, "The panes",
       "One pane per KV-cache policy, every one fed the same stream of prompts, so what each cache keeps — and "
       "what it answers — can be compared token by token."},
  };
  if (!panes_.empty()) {
    const PolicyPane* pane = panes_.front();
    const QString policy = QString::fromStdString(std::string(pane->policy().unit().title));
    stops.push_back({pane->titleLabel(), "A pane's policy",
                     "Its title names the policy (here " + policy + ") and its settings; hover it for what the "
                     "policy keeps."});
    stops.push_back({pane->numbersLabel(), "Its numbers",
                     "The tokens its cache holds (and how many are low-bit codes), its KV memory and its speed."});
    stops.push_back({pane->text(), "The answer",
                     "What the model writes through this cache. Each token is coloured by its fate in it — sink, "
                     "heavy hitter, recent, kept or evicted (the key is at the bottom). Click a token to inspect it."});
    stops.push_back({pane->heatmap(), "The attention heatmap",
                     "Where the chosen layer and head attend: a row per query, a column per key the cache still "
                     "holds. Hover a cell for the token, its probability and its score."});
    stops.push_back({pane->overview(), "The whole stream",
                     "Every position of the run, from the first token to the newest, coloured where this cache "
                     "still holds it. The marker is where the stream passes the model's trained context."});
    stops.push_back({pane->raster(), "The detail",
                     "The stretch marked in the whole stream, token by token and layer by layer: the wheel zooms, "
                     "a drag scrolls."});
    stops.push_back({pane->meter(), "Attention sparsity",
                     "How much of the attention falls on the few keys it likes best: the higher, the more a small "
                     "cache can keep of what matters."});
  }
  stops.push_back({transport_, "The timeline",
                   "Pause, seek, step back and forward, or go Live: every pane shows the chosen step. Choose the "
                   "layer and head the views show; type a prompt to add it to the live stream."});
  stops.push_back({analysis_, "The shared views",
                   "In tabs: KV memory and speed (perplexity, agreement and KL in teacher-forced mode), the token "
                   "inspector, the heavy hitters, the head and model views, the needle. Enlarge gives them the height."});
  stops.push_back({controls_dock_, "The controls",
                   "The run's settings: model, tokenizer, prompts, backend, which policies run, their budget and "
                   "parts, each pane's KV precision. A change that restarts the run asks first."});
  stops.push_back({legend_, "The colours",
                   "What each fate looks like in every pane: the same colours in the answer, the heatmaps and the "
                   "rasters."});
  stops.push_back({banner_, "Messages",
                   "What must not scroll away: what failed, what runs instead, and what to do next."});
  return stops;
}

void MainWindow::showOverview() {
  if (findChild<WindowTour*>(QString(), Qt::FindDirectChildrenOnly)) return;
  statusBar()->clearMessage();  // a message stands in the colours' key's place: the key is a stop
  new WindowTour(this, tourStops());  // deletes itself when closed
}

std::vector<std::pair<QString, QString>> MainWindow::shortcutList() const {
  std::vector<std::pair<QString, QString>> rows;
  std::set<const QAction*> seen;
  const auto add = [&](const QAction* a) {
    if (a->shortcut().isEmpty() || !seen.insert(a).second) return;
    QString text = a->text();
    text.remove('&');
    rows.push_back({text, a->shortcut().toString(QKeySequence::NativeText)});
  };
  // In the menus' order, then the window's other actions (the dock's, the pane area's).
  std::function<void(const QMenu*)> walk = [&](const QMenu* menu) {
    for (const QAction* a : menu->actions())
      if (a->menu()) walk(a->menu());
      else add(a);
  };
  for (const QAction* top : menuBar()->actions())
    if (top->menu()) walk(top->menu());
  for (const QAction* a : findChildren<QAction*>()) add(a);
  // Keys a view takes itself, not through an action.
  rows.push_back({"Head view: an earlier or a later query", "Left / Right"});
  rows.push_back({"Head view: the shown step's query", "End"});
  return rows;
}

void MainWindow::showShortcuts() {
  QString table = "<table cellspacing='6'>";
  for (const auto& [what, keys] : shortcutList())
    table += "<tr><td><b>" + keys.toHtmlEscaped() + "</b></td><td>" + what.toHtmlEscaped() + "</td></tr>";
  table += "</table>";
  auto* dialog = new QDialog(this);
  dialog->setObjectName("shortcuts_dialog");
  dialog->setWindowTitle("Keyboard shortcuts");
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  auto* layout = new QVBoxLayout(dialog);
  auto* label = new QLabel(table);
  label->setTextFormat(Qt::RichText);
  layout->addWidget(label);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  layout->addWidget(buttons);
  dialog->show();
}

}  // namespace h2o::ui
