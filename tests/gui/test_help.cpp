// Help in the window (issue 57, "nothing tells a newcomer what they see"):
// F1 walks a class through each part of the window, outlined where it is;
// the shortcuts list every key the window's actions take; About has the version.
#include <gtest/gtest.h>

#include <QAction>
#include <QDialog>
#include <QDockWidget>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QTabWidget>
#include <QTest>

#include "tests/gui/gui_test_helpers.h"
#include "ui/shell/main_window.h"
#include "ui/shell/pane_area.h"
#include "ui/shell/transport_bar.h"
#include "ui/shell/window_tour.h"
#include "ui/views/policy_pane.h"

using namespace h2o;
using namespace h2o::ui;
using namespace h2o::ui::gui_test;

namespace {

QMenu* help_menu(MainWindow& w) {
  for (QMenu* menu : w.menuBar()->findChildren<QMenu*>(Qt::FindDirectChildrenOnly))
    if (menu->title() == "&Help") return menu;
  return nullptr;
}

// Help ▸ Overview of the window (its key, F1, is checked on the menu).
WindowTour* open_tour(MainWindow& w) {
  w.findChild<QAction*>("overview")->trigger();
  QTest::qWait(20);
  return w.findChild<WindowTour*>("window_tour");
}

}  // namespace

TEST(Help, TheMenuOffersTheOverviewOnF1TheShortcutsAndAbout) {
  MainWindow w(synthetic_options());
  QMenu* help = help_menu(w);
  ASSERT_NE(help, nullptr);
  QStringList texts;
  for (QAction* a : help->actions()) texts << a->text();
  EXPECT_EQ(texts, (QStringList{"Overview of the window", "Keyboard shortcuts", "About H2O Studio"}));
  EXPECT_EQ(help->actions()[0]->shortcut(), QKeySequence(Qt::Key_F1));
}

// Every stop outlines its part exactly where the window draws it, in the order a
// class would read the window: the panes, one pane's parts, then the rest.
TEST(Help, TheOverviewOutlinesEachPartWhereItIsAndStepsThroughThem) {
  MainWindow w(four_pane_options(QSize(1280, 720)));
  w.show();
  w.start();
  play(w, 5);
  WindowTour* tour = open_tour(w);
  ASSERT_NE(tour, nullptr) << "Help ▸ Overview opened nothing";
  EXPECT_EQ(tour->geometry(), w.rect()) << "the overview covers the window";
  QStringList titles;
  for (int i = 0; i < tour->count(); ++i) {
    ASSERT_EQ(tour->current(), i);
    const TourStop& stop = tour->stop();
    titles << stop.title;
    ASSERT_TRUE(stop.part);
    EXPECT_TRUE(stop.part->isVisible()) << stop.title.toStdString();
    const QRect where(stop.part->mapTo(&w, QPoint(0, 0)), stop.part->size());
    EXPECT_EQ(tour->partRect(), where.intersected(w.rect())) << stop.title.toStdString();
    EXPECT_FALSE(stop.text.isEmpty());
    // Its words stay inside the window and, where there is room, off the part they name.
    const QRect box = tour->calloutRect();
    EXPECT_TRUE(w.rect().contains(box)) << stop.title.toStdString();
    if (where.height() < w.height() / 2) {
      EXPECT_FALSE(box.intersects(where)) << stop.title.toStdString();
    }
    if (i + 1 < tour->count()) QTest::keyClick(tour, Qt::Key_Right);
  }
  QStringList expected{"The panes", "The answer", "The attention heatmap", "The whole stream", "The detail",
                       "The timeline", "The shared views", "The colours"};
  if (w.controlsDock()->isVisible()) expected << "The controls";
  for (const QString& part : expected)
    EXPECT_TRUE(titles.contains(part)) << part.toStdString() << " is not in the overview: " << titles.join(", ").toStdString();
  EXPECT_EQ(titles.front(), "The panes");
  // The first pane's parts are its own.
  EXPECT_EQ(titles.indexOf("The answer"), titles.indexOf("Its numbers") + 1);

  QTest::keyClick(tour, Qt::Key_Left);
  EXPECT_EQ(tour->current(), tour->count() - 2);
  // Keys go to the overview, not to the run behind it (Space is Play's key).
  const int64_t shown = w.lastSnapshot()->step;
  QTest::keyClick(tour, Qt::Key_Space);
  EXPECT_EQ(tour->current(), tour->count() - 1);
  QTest::qWait(300);
  EXPECT_EQ(w.lastSnapshot()->step, shown) << "Space played the run behind the overview";
  QTest::keyClick(tour, Qt::Key_Escape);
  QTest::qWait(20);
  EXPECT_EQ(w.findChild<WindowTour*>("window_tour"), nullptr) << "Esc closed the overview";
  // Opened again, it starts at its first stop.
  tour = open_tour(w);
  ASSERT_NE(tour, nullptr);
  EXPECT_EQ(tour->current(), 0);
}

// A part not shown (the controls' dock closed, no banner) is left out rather than outlined off screen.
TEST(Help, TheOverviewLeavesOutWhatIsHidden) {
  MainWindow w(synthetic_options());
  w.show();
  w.start();
  play(w, 2);
  w.controlsDock()->hide();
  WindowTour* tour = open_tour(w);
  ASSERT_NE(tour, nullptr);
  for (int i = 0; i < tour->count(); ++i) {
    EXPECT_NE(tour->stop().title, "The controls");
    EXPECT_NE(tour->stop().title, "Messages") << "no banner is up";
    if (i + 1 < tour->count()) tour->next();
  }
}

TEST(Help, TheShortcutsListEveryKeyOfTheWindowsActions) {
  MainWindow w(synthetic_options());
  const auto rows = w.shortcutList();
  QStringList keys;
  for (const auto& [what, key] : rows) keys << key;
  for (QAction* a : w.findChildren<QAction*>()) {
    if (a->shortcut().isEmpty()) continue;
    EXPECT_TRUE(keys.contains(a->shortcut().toString(QKeySequence::NativeText)))
        << a->text().toStdString() << " (" << a->shortcut().toString().toStdString() << ") is not listed";
  }
  for (const char* key : {"F1", "F11", "K", "Ctrl+K"}) EXPECT_TRUE(keys.contains(key)) << key;
  EXPECT_EQ(keys.removeDuplicates(), 0) << "a key listed twice";
  w.show();
  w.showShortcuts();
  QTest::qWait(20);
  auto* dialog = w.findChild<QDialog*>("shortcuts_dialog");
  ASSERT_NE(dialog, nullptr);
  const QLabel* table = dialog->findChild<QLabel*>();
  ASSERT_NE(table, nullptr);
  EXPECT_TRUE(table->text().contains("Overview of the window")) << table->text().toStdString();
}
