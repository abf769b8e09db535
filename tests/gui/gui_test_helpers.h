#pragma once
// What the GUI tests share: a small synthetic run on the CPU, and playing N
// steps while the event loop turns.
#include <gtest/gtest.h>

#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTest>

#include "ui/shell/banner.h"
#include "ui/shell/main_window.h"

namespace h2o::ui::gui_test {

// stories260K's shape with random weights, its byte tokenizer and the
// built-in prompts: loads in milliseconds and needs no files.
inline MainWindowOptions synthetic_options() {
  MainWindowOptions o;
  o.persist = false;
  o.dialogs = false;
  StudioConfig& c = o.settings.config;
  c.model = "synthetic:stories260K";
  c.tokenizer.clear();
  c.prompts.clear();
  c.budget = 32;
  c.params["sinks"] = 4;
  c.max_new_tokens = 24;
  c.greedy = true;
  c.threads = 1;
  c.capture_layer = 1;
  o.settings.head = -1;
  // The app's default size, whatever the offscreen platform's screen (800x600) would give.
  o.size = QSize(1800, 1000);
  return o;
}

// The four policies side by side in a window of `size` (a 2x2 grid at 1280x720).
inline MainWindowOptions four_pane_options(QSize size) {
  MainWindowOptions o = synthetic_options();
  o.settings.config.policies = {"full", "streaming", "h2o", "tova"};
  o.size = size;
  return o;
}

// Plays `steps` and waits for the frame drawn after the last one.
inline void play(MainWindow& w, int steps) {
  QSignalSpy done(&w, &MainWindow::autoplayFinished);
  w.playSteps(steps);
  ASSERT_TRUE(done.wait(60000)) << "autoplay did not finish";
}

// Plays 100 steps at a time until the recording spool has stopped at its
// limit (its banner is up; a few KB a step of this run: hundreds of steps
// for 1 MiB), then `after` more; returns the steps played (0 if it never stopped).
inline int play_until_recording_banner(MainWindow& w, int after) {
  int played = 0;
  for (int round = 0; round < 80 && !w.banner()->has("recording"); ++round) {
    play(w, 100);
    played += 100;
  }
  if (!w.banner()->has("recording")) return 0;
  play(w, after);
  return played + after;
}

// Waits until `done` holds or `ms` pass, turning the event loop.
template <class F>
bool wait_until(F done, int ms) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QTest::qWait(10);
  return done();
}

// Waits for a drawn snapshot that satisfies `pred`.
template <class F>
bool wait_for_snapshot(MainWindow& w, F pred, int ms = 20000) {
  return wait_until([&] { return w.lastSnapshot() && pred(*w.lastSnapshot()); }, ms);
}

inline QByteArray head_of(const QString& path, int n) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.read(n);
}

}  // namespace h2o::ui::gui_test
