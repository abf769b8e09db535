// What the window opens without a flag: File ▸ Open model…, the recent models,
// Open recording…, files dropped onto it or given on the command line (a
// double-click on a recording reaches it so, through the desktop entry), and
// the first-run and failed states' words.
#include "ui/shell/main_window.h"

#include <QAction>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QSettings>
#include <QUrl>

#include "core/studio/opened_files.h"
#include "ui/shell/banner.h"
#include "ui/shell/control_panel.h"

namespace h2o::ui {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// "kjv-1M.bin with kjv-tok2k.model": what a recent model's menu entry says (its paths in the tooltip).
QString recent_label(const RecentModel& r) {
  QString label = QFileInfo(q(r.model)).fileName();
  if (label.isEmpty()) label = q(r.model);
  if (!r.tokenizer.empty()) label += " with " + QFileInfo(q(r.tokenizer)).fileName();
  return label;
}

}  // namespace

QList<QAction*> MainWindow::buildOpenActions() {
  open_model_ = makeAction(IconKind::Open, "Open model…", "open_model", QKeySequence("Ctrl+Shift+O"),
                           "Run a model file: .gguf, llama2.c .bin, .safetensors or a Hugging Face config.json "
                           "(or drop it, or its folder, onto the window)");
  connect(open_model_, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, "Open a model", {}, "Models (*.gguf *.bin *.safetensors config.json);;All files (*)");
    if (!path.isEmpty()) openFiles({path});
  });
  recent_menu_ = new QMenu("Open recent model", this);
  recent_menu_->setObjectName("recent_menu");
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
  if (options_.persist) {
    QSettings settings;
    recent_ = load_recent_models(settings);
  }
  fillRecentMenu();
  open_ = makeAction(IconKind::Open, "Open recording…", "open", QKeySequence::Open,
                     "Replay a saved run, no model needed (or drop it onto the window)");
  connect(open_, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open a recording", {},
                                                      "H2O Studio recordings (*.jsonl);;All files (*)");
    if (!path.isEmpty()) openReplay(path);
  });
  setAcceptDrops(true);
  return {open_model_, recent_menu_->menuAction(), open_};
}

// The recent models, newest first; one whose file has gone is shown, disabled, as missing.
void MainWindow::fillRecentMenu() {
  recent_menu_->clear();
  recent_menu_->setEnabled(!recent_.empty());
  for (const RecentModel& r : recent_) {
    const bool there = QFileInfo::exists(q(r.model)) && (r.tokenizer.empty() || QFileInfo::exists(q(r.tokenizer)));
    QAction* a = recent_menu_->addAction(recent_label(r) + (there ? "" : " (missing)"));
    a->setToolTip(q(r.model) + (r.tokenizer.empty() ? "" : "\n" + q(r.tokenizer)));
    a->setEnabled(there);
    connect(a, &QAction::triggered, this, [this, r] { openModel(q(r.model), q(r.tokenizer)); });
  }
  recent_menu_->setToolTipsVisible(true);
}

void MainWindow::rememberModel() {
  const StudioConfig& c = applied_.config;
  if (c.model.empty() || c.model.rfind("synthetic:", 0) == 0) return;  // the demo, or no file
  recent_ = remember_model(recent_, {c.model, c.tokenizer});
  if (options_.persist) {
    QSettings settings;
    save_recent_models(settings, recent_);
  }
  fillRecentMenu();
}

bool MainWindow::openFiles(const QStringList& paths) {
  std::vector<std::string> list;
  for (const QString& p : paths) list.push_back(p.toStdString());
  const OpenRequest request = open_request(list);
  banner_->set("open", q(request.problem));
  if (!request.recording.empty()) openReplay(q(request.recording));
  else if (!request.empty()) openModel(q(request.model), q(request.tokenizer));
  return !request.empty();
}

// As a change in the controls' Model field: the window asks before a run with steps restarts.
void MainWindow::openModel(const QString& model, const QString& tokenizer) {
  StudioConfig c = controls_->config();
  if (!model.isEmpty()) c.model = model.toStdString();
  // A new model takes the tokenizer given with it, or its own; a tokenizer alone keeps the model.
  if (!model.isEmpty() || !tokenizer.isEmpty()) c.tokenizer = tokenizer.toStdString();
  controls_->setConfig(c);
  applyRunSettings();
}

void MainWindow::sayIfSynthetic(const StudioConfig& chosen, const StudioConfig& running) {
  const bool synthetic_demo = chosen.model.empty() && running.model.rfind("synthetic:", 0) == 0;
  banner_->set("demo", synthetic_demo ? "The demo model was not found, so this is a synthetic model with random "
                                        "weights: open a trained one with File ▸ Open model…, or drop a .gguf, "
                                        "llama2.c .bin or Hugging Face folder onto the window."
                                      : QString());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    paths << (url.isLocalFile() ? url.toLocalFile() : url.toString());
  event->acceptProposedAction();
  openFiles(paths);
}

}  // namespace h2o::ui
