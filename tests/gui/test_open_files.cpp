// A first run with no terminal: a model or a recording dropped onto the window
// (or given on the command line, as a double-click in a file manager gives it)
// opens; what cannot be opened, and a first run without the demo, say in the
// banner what to do next; the recent models and the About box are in the menus.
#include <gtest/gtest.h>

#include <QDropEvent>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUrl>

#include "core/studio/assets.h"
#include "tests/gui/gui_test_helpers.h"
#include "tests/model_writers.h"
#include "ui/shell/banner.h"
#include "ui/shell/main_window.h"

using namespace h2o;
using namespace h2o::ui;
using namespace h2o::ui::gui_test;

namespace {

// A tiny llama2.c model with random weights (tests/model_writers.h): a real file to open, with
// the byte tokenizer's 512 ids (as stories260K) for the built-in prompts.
QString write_model(const QTemporaryDir& dir) {
  const QString path = dir.filePath("tiny.bin");
  ModelConfig c = test::tiny_config();
  c.vocab_size = 512;
  c.max_seq_len = 256;
  test::write_llama2c(path.toStdString(), test::random_arrays(c, 3, false));
  return path;
}

// Drops `paths` onto the window as a file manager does.
void drop(MainWindow& w, const QStringList& paths) {
  QMimeData data;
  QList<QUrl> urls;
  for (const QString& p : paths) urls << QUrl::fromLocalFile(p);
  data.setUrls(urls);
  const QPoint at(100, 100);
  QDragEnterEvent enter(at, Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &enter);
  ASSERT_TRUE(enter.isAccepted()) << "the window refused the drag";
  QDropEvent event(at, Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &event);
  ASSERT_TRUE(event.isAccepted()) << "the window did not take the drop";
}

MainWindowOptions confirming_options() {
  MainWindowOptions o = synthetic_options();
  o.confirm_restart = [](const QString&) { return true; };
  return o;
}

}  // namespace

TEST(OpenFiles, ADroppedModelRunsAndJoinsTheRecentModels) {
  QTemporaryDir dir;
  const QString model = write_model(dir);
  MainWindow w(confirming_options());
  w.show();
  w.start();
  play(w, 3);
  EXPECT_FALSE(w.recentMenu()->isEnabled());  // nothing opened yet (the synthetic model is no file)
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  drop(w, {model});
  ASSERT_TRUE(loaded.wait(30000)) << "the dropped model did not load";
  const QString title = loaded.first().first().toString();
  EXPECT_TRUE(title.contains("tiny.bin")) << title.toStdString();
  ASSERT_EQ(w.recentModels().size(), 1u);
  EXPECT_EQ(w.recentModels().front().model, model.toStdString());
  ASSERT_TRUE(w.recentMenu()->isEnabled());
  ASSERT_EQ(w.recentMenu()->actions().size(), 1);
  EXPECT_EQ(w.recentMenu()->actions().front()->text(), "tiny.bin");
  play(w, 3);
  EXPECT_EQ(w.lastSnapshot()->steps_ingested, 3);
  EXPECT_FALSE(w.banner()->has("open"));
}

TEST(OpenFiles, ADroppedRecordingReplays) {
  QTemporaryDir dir;
  const QString path = dir.filePath("run.h2orec.jsonl");
  {
    MainWindow w(synthetic_options());
    w.show();
    w.start();
    play(w, 10);
    QSignalSpy written(&w, &MainWindow::fileWritten);
    w.saveRecording(path);
    ASSERT_TRUE(written.wait(30000));
  }
  MainWindow w(confirming_options());
  w.show();
  w.start();
  play(w, 2);
  QSignalSpy replayed(&w, &MainWindow::replayOpened);
  drop(w, {write_model(dir), path});  // a recording wins over a model dropped with it
  ASSERT_TRUE(replayed.wait(30000)) << "the dropped recording did not open";
  play(w, 10);
  EXPECT_EQ(w.lastSnapshot()->steps_ingested, 10);
}

TEST(OpenFiles, WhatCannotBeOpenedIsSaidInTheBannerAndTheRunGoesOn) {
  QTemporaryDir dir;
  QFile notes(dir.filePath("notes.txt"));
  ASSERT_TRUE(notes.open(QIODevice::WriteOnly));
  notes.write("not a model\n");
  notes.close();
  MainWindow w(confirming_options());
  w.show();
  w.start();
  play(w, 3);
  drop(w, {notes.fileName()});
  ASSERT_TRUE(w.banner()->has("open"));
  EXPECT_TRUE(w.banner()->text("open").contains("notes.txt: not a model, tokenizer or recording"));
  EXPECT_TRUE(w.banner()->text("open").contains("open a model (.gguf"));
  play(w, 3);  // the run before goes on
  EXPECT_EQ(w.lastSnapshot()->steps_ingested, 6);
}

TEST(OpenFiles, TheCommandLinesFileOpensAtStart) {
  QTemporaryDir dir;
  MainWindowOptions o = synthetic_options();
  o.open = {write_model(dir)};
  MainWindow w(o);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  w.start();
  ASSERT_TRUE(loaded.wait(30000));
  EXPECT_TRUE(loaded.first().first().toString().contains("tiny.bin"));
}

TEST(OpenFiles, AModelThatFailsSaysWhatToDoNext) {
  QTemporaryDir dir;
  QFile bad(dir.filePath("broken.gguf"));
  ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
  bad.write("GGUF but nothing else");
  bad.close();
  MainWindow w(confirming_options());
  w.show();
  QSignalSpy errors(&w, &MainWindow::errorShown);
  w.start();
  play(w, 2);
  w.openFiles({bad.fileName()});
  ASSERT_TRUE(errors.wait(30000));
  ASSERT_TRUE(w.banner()->has("model"));
  EXPECT_TRUE(w.banner()->text("model").contains("broken.gguf")) << w.banner()->text("model").toStdString();
  EXPECT_TRUE(w.banner()->text("model").contains("File ▸ Open model…")) << w.banner()->text("model").toStdString();
}

TEST(OpenFiles, WithoutTheDemoTheBannerSaysTheModelIsSyntheticAndHowToOpenOne) {
  const QByteArray before = qgetenv("H2O_ASSETS");
  qputenv("H2O_ASSETS", "/nonexistent");
  MainWindowOptions o = synthetic_options();
  o.settings.config.model.clear();  // the demo's default, which is not there
  MainWindow w(o);
  w.show();
  w.start();
  play(w, 2);
  qputenv("H2O_ASSETS", before);
  ASSERT_TRUE(w.banner()->has("demo"));
  EXPECT_TRUE(w.banner()->text("demo").contains("synthetic model with random weights"));
  EXPECT_TRUE(w.banner()->text("demo").contains("File ▸ Open model…"));
}

TEST(OpenFiles, TheMenusOfferOpeningAModelRecentModelsAndAbout) {
  MainWindow w(synthetic_options());
  QStringList file, help;
  for (QMenu* menu : w.menuBar()->findChildren<QMenu*>(Qt::FindDirectChildrenOnly)) {
    QStringList& texts = menu->title() == "&File" ? file : help;
    if (menu->title() != "&File" && menu->title() != "&Help") continue;
    for (QAction* a : menu->actions()) texts << a->text();
  }
  ASSERT_GE(file.size(), 3);
  EXPECT_EQ(file.mid(0, 3), (QStringList{"Open model…", "Open recent model", "Open recording…"}));
  EXPECT_EQ(help.back(), "About H2O Studio");  // after the overview and the shortcuts (test_help.cpp)
}

// The demo's model chosen in the window by its file (Model ▸ File…, a drop) streams text, not
// "<1991><270><261>…": it takes the demo's tokenizer, as the default does. A llama2.c model with no
// tokenizer at all says so in the banner, naming the file, instead of streaming ids unexplained.
TEST(OpenFiles, TheDemosModelChosenInTheWindowStreamsTextAndOneWithoutATokenizerSaysSo) {
  const DefaultInputs demo = default_inputs(find_assets_dir());
  if (demo.tokenizer.empty() || demo.model.rfind("synthetic:", 0) == 0) GTEST_SKIP() << "no demo model";
  MainWindow w(confirming_options());
  w.show();
  w.start();
  play(w, 3);
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  w.openModel(QString::fromStdString(demo.model), {});
  ASSERT_TRUE(loaded.wait(30000)) << "the demo model did not load";
  play(w, 40);
  EXPECT_FALSE(w.banner()->has("tokenizer")) << w.banner()->text("tokenizer").toStdString();
  std::string text;
  for (const auto& token : w.lastSnapshot()->panes[0].tokens) text += token.text;
  EXPECT_EQ(text.find("<1"), std::string::npos) << text;  // no id shown as "<id>"
  EXPECT_FALSE(text.empty());
  // A model without a tokenizer of its own, given none.
  QTemporaryDir dir;
  const QString bare = write_model(dir);
  QSignalSpy again(&w, &MainWindow::modelLoaded);
  w.openModel(bare, {});
  ASSERT_TRUE(again.wait(30000)) << "the tiny model did not load";
  ASSERT_TRUE(w.banner()->has("tokenizer"));
  EXPECT_TRUE(w.banner()->text("tokenizer").contains(bare + " has no tokenizer of its own"))
      << w.banner()->text("tokenizer").toStdString();
}
