// The real window driven by synthetic steps of Llama-2-7B's shape, four
// panes (core/studio/synthetic_steps.h): the app's whole path — recording and
// analysis beside the source, snapshots, every widget — keeps up for
// thousands of steps, and every pane and the timeline show one step.
#include <gtest/gtest.h>

#include <QDir>
#include <algorithm>
#include <cstdlib>
#include <QLabel>
#include <qcustomplot.h>

#include "core/base/sanitizers.h"
#include "tests/gui/gui_test_helpers.h"
#include "ui/shell/transport_bar.h"
#include "ui/views/curves_panel.h"
#include "ui/views/heatmap_plot.h"
#include "ui/views/policy_pane.h"
#include "ui/views/raster_plot.h"
#include "ui/views/token_flow_view.h"

using namespace h2o;
using namespace h2o::ui;
using namespace h2o::ui::gui_test;

namespace {
// 20,000 steps (about a minute on the 2-core development machine; 500
// under the sanitizers, which make every step several times slower);
// H2O_GUI_SYNTHETIC_STEPS sets another count.
int steps_to_play() {
  if (const char* asked = std::getenv("H2O_GUI_SYNTHETIC_STEPS")) return std::max(100, std::atoi(asked));
#if H2O_ASAN
  return 500;
#else
  return 20000;
#endif
}
}  // namespace

TEST(SyntheticShapes, TheWindowKeepsUpWithLlama2_7bFourPanesAndShowsOneStep) {
  MainWindowOptions options = synthetic_options();
  options.size = QSize(1920, 1080);
  MainWindow w(options);
  w.show();
  w.start();
  const SyntheticStepsSpec spec = synthetic_steps_spec("llama2-7b", {"full", "streaming", "h2o", "tova"}, 1024, 64);
  const int kSteps = steps_to_play();
  w.startSyntheticRun(spec);
  ASSERT_TRUE(wait_for_snapshot(w, [](const StudioSnapshot& s) { return s.layers == 32 && s.panes.size() == 4; }));
  QSignalSpy done(&w, &MainWindow::autoplayFinished);
  w.playSteps(kSteps);
  ASSERT_TRUE(done.wait(170000)) << "autoplay did not finish";
  ASSERT_TRUE(wait_for_snapshot(w, [&](const StudioSnapshot& s) { return s.latest_step == kSteps - 1; }, 10000));
  const StudioSnapshot& s = *w.lastSnapshot();
  // One step everywhere: the snapshot's, every pane's, the timeline's.
  EXPECT_EQ(s.step, kSteps - 1);
  EXPECT_EQ(s.steps_ingested, kSteps);
  EXPECT_EQ(w.transport()->stepLabel()->text().section(' ', 1, 1).toLongLong(), s.step);
  ASSERT_EQ(w.panes().size(), 4u);
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(s.panes[p].stream_length, s.panes[0].stream_length) << "pane " << p;
    EXPECT_GT(w.panes()[p]->text()->tokenCount(), 0);
    EXPECT_GT(w.panes()[p]->heatmap()->data().rows(), 0);
    EXPECT_GT(w.panes()[p]->raster()->cellCount(), 0);
  }
  // Every token and eviction came through, thinned or not: the full cache holds
  // every token fed, the bounded panes at most their budget and slack.
  EXPECT_EQ(s.panes[0].cached_tokens, s.panes[0].stream_length);
  for (size_t p = 1; p < 4; ++p) EXPECT_LE(s.panes[p].cached_tokens, 1024 + 64) << "pane " << p;
  // The full cache's memory in MiB, or past 4 GiB in GiB, not as "1.25·10⁶ KiB".
  const bool gib = s.panes[0].live_bytes >= (int64_t(4) << 30);
  EXPECT_EQ(w.curves()->memory()->yAxis->label(), gib ? "live KV (GiB)" : "live KV (MiB)") << s.panes[0].live_bytes;
  const QString shot = QDir::temp().filePath("h2o-gui-llama2-7b-four-panes.png");
  EXPECT_TRUE(w.grab().save(shot));
  std::printf("screenshot: %s (thinned steps: %lld)\n", qPrintable(shot), static_cast<long long>(s.thinned_steps));
}
