// The needle in the window: planted from the transport bar's box, shown in
// the Needle tab in words, grids and curves, asked for with K (Ask), marked
// in the panes, and replayed from a saved recording to the same words.
#include <gtest/gtest.h>

#include <QAction>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "tests/gui/gui_test_helpers.h"
#include "ui/shell/transport_bar.h"
#include "ui/views/policy_pane.h"
#include "ui/views/needle_view.h"

using namespace h2o;
using namespace h2o::ui;
using namespace h2o::ui::gui_test;

namespace {

// Waits until a drawn snapshot satisfies `ready`.
template <class Ready>
bool wait_for(MainWindow& w, Ready ready) {
  for (int i = 0; i < 200; ++i) {
    if (w.lastSnapshot() && ready(*w.lastSnapshot())) return true;
    QSignalSpy drawn(&w, &MainWindow::snapshotDrawn);
    drawn.wait(300);
  }
  return false;
}

}  // namespace

TEST(NeedleView, PlantedFromTheBarAskedWithKAndReplayedInTheSameWords) {
  QTemporaryDir dir;
  const QString path = dir.filePath("needle.h2orec.jsonl");
  QString live_summary;
  {
    MainWindowOptions o = synthetic_options();
    o.settings.config.policies = {"full", "streaming", "h2o"};
    MainWindow w(o);
    w.show();
    w.start();
    play(w, 5);
    QLineEdit* box = w.transport()->needle();
    ASSERT_TRUE(box->isEnabled());
    box->setText("The secret word is Bethlehem.");
    QTest::keyClick(box, Qt::Key_Return);
    EXPECT_TRUE(box->text().isEmpty());
    EXPECT_EQ(w.analysisTabs()->currentWidget(), w.needleView()) << "planting shows the Needle tab";
    play(w, 80);
    const auto fed = w.lastSnapshot();
    ASSERT_TRUE(fed->needle.planted);
    ASSERT_EQ(fed->needle.panes.size(), 3u);
    EXPECT_GE(fed->needle.panes[0].begin, 0);
    EXPECT_EQ(fed->panes[0].needle_begin, fed->needle.panes[0].begin);
    // Each pane's numbers say what it holds of it, where an audience reads them.
    EXPECT_TRUE(w.panes()[0]->numbersText().contains("needle <b>100 %</b> held")) << w.panes()[0]->numbersText().toStdString();
    EXPECT_TRUE(w.panes()[1]->numbersText().contains("needle")) << w.panes()[1]->numbersText().toStdString();

    QAction* ask = w.findChild<QAction*>("ask_needle");
    ASSERT_TRUE(ask);
    ask->trigger();  // paused: one step, then every pane answers
    ASSERT_TRUE(wait_for(w, [](const StudioSnapshot& s) { return !s.needle.panes[0].asks.empty(); }))
        << "no ask came back";
    const QString summary = w.needleView()->summary()->text();
    EXPECT_TRUE(summary.contains("Full cache holds all of the needle")) << summary.toStdString();
    EXPECT_TRUE(summary.contains("StreamingLLM dropped the needle at step")) << summary.toStdString();
    EXPECT_TRUE(summary.contains("Asked after step")) << summary.toStdString();
    live_summary = summary;
    QSignalSpy written(&w, &MainWindow::fileWritten);
    w.saveRecording(path);
    ASSERT_TRUE(written.wait(30000));
  }
  MainWindowOptions o = synthetic_options();
  o.replay = path;
  o.tab = "needle";
  MainWindow r(o);
  r.show();
  QSignalSpy loaded(&r, &MainWindow::modelLoaded);
  r.start();
  ASSERT_TRUE(loaded.wait(30000));
  play(r, 100);  // to the replay's end
  ASSERT_TRUE(wait_for(r, [](const StudioSnapshot& s) { return s.needle.planted && !s.needle.panes[0].asks.empty(); }));
  EXPECT_EQ(r.needleView()->summary()->text().toStdString(), live_summary.toStdString());
}

TEST(NeedleView, AskWithoutANeedleSaysWhatToDo) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 3);
  QSignalSpy errors(&w, &MainWindow::errorShown);
  w.askNeedle();
  ASSERT_TRUE(errors.wait(10000));
  EXPECT_TRUE(errors.first().first().toString().contains("plant a needle first")) << errors.first().first().toString().toStdString();
}
