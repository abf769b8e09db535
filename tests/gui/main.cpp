// GoogleTest's main for the GUI tests: one QApplication for all of them, on
// the offscreen platform unless the environment asks for another.
#include <gtest/gtest.h>

#include <QApplication>
#include <QStandardPaths>

#include "ui/plot/theme.h"

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QStandardPaths::setTestModeEnabled(true);  // never touch the user's settings
  QApplication app(argc, argv);
  QApplication::setOrganizationName("H2O Studio Tests");
  h2o::ui::apply_theme(app);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
