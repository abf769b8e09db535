// The app's run without Qt (core/studio/studio_run.h): a replay steps to its
// end and says so, the timeline moves through what was seen, a live run
// records to a spool that goes with it, keeps its newest steps past its limit
// with one warning, and names its files and figures as the worker passes them on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/studio/studio_run.h"
#include "tests/assets.h"
#include "tests/studio/same_pane.h"
#include "tests/studio/small_studio_config.h"

using namespace h2o;

namespace {

StudioConfig small_config() { return test::small_studio_config(); }

struct LiveSetup {
  StudioConfig config = small_config();
  StudioInputs inputs = load_studio_inputs(config);
  ViewSelection view;
  LiveSetup() {
    view.layer = 1;
    view.head = 3;
  }
  std::unique_ptr<StudioRun> start(const std::string& spool, int64_t limit = 0) const {
    return StudioRun::live(config, inputs, make_cpu_backend(inputs.model, 1), view, spool, limit);
  }
};

// A recording of `steps` steps of a small live run, as the app saves it; `view_layer` < 0: an older file naming no view.
std::string write_recording(const std::filesystem::path& dir, int steps, int view_layer = 1) {
  const StudioConfig c = small_config();
  const StudioInputs in = load_studio_inputs(c);
  auto engine = make_studio_engine(c, in, make_cpu_backend(in.model, 1));
  RecordingHeader header = make_header(*engine, nlohmann::json::object(), "stream");
  header.view_layer = view_layer;
  header.view_head = view_layer < 0 ? -1 : 3;
  if (view_layer >= 0) header.settings = studio_config_json(c);
  const std::string path = (dir / "run.h2orec.jsonl").string();
  const StudioCaptureSchedule watch(1);
  RecordingWriter w(path, header);
  for (int i = 0; i < steps; ++i) w.write(engine->step(&watch));
  return path;
}

int64_t shown_step(const StudioRun& run) { return run.snapshot(ViewSelection{}).step; }

}  // namespace

TEST(StudioRun, AReplayStepsToItsEndAndSaysSo) {
  const auto dir = test::temp_dir("studio-run-replay");
  const std::string path = write_recording(dir, 20);
  auto run = StudioRun::replay(path);
  EXPECT_TRUE(run->is_replay());
  EXPECT_FALSE(run->is_live());
  EXPECT_TRUE(run->runs());
  EXPECT_EQ(run->replay_path(), path);

  const ReplayOpening opening = run->replay_opening(StudioConfig{});
  EXPECT_EQ(opening.layer, 1);
  EXPECT_EQ(opening.head, 3);
  EXPECT_EQ(opening.steps, 20);
  EXPECT_EQ(opening.settings.budget, 24);
  EXPECT_TRUE(opening.first.stepped) << "a replay opens on its first step";
  EXPECT_TRUE(run->has_steps());
  EXPECT_EQ(run->latest_step(), 0);

  const RunDescription about = run->describe();
  EXPECT_EQ(about.title, "synthetic:stories260K (replay)");
  EXPECT_EQ(about.details.rfind("replay of run.h2orec.jsonl · 5 layers × 8 heads (", 0), 0u) << about.details;
  EXPECT_EQ(about.types, "replay");

  for (int i = 1; i < 20; ++i) {
    const StepResult r = run->step();
    ASSERT_TRUE(r.stepped) << i;
    EXPECT_TRUE(r.end_reason.empty());
    EXPECT_TRUE(r.failure.empty());
    EXPECT_TRUE(r.banner.empty());
  }
  EXPECT_EQ(run->latest_step(), 19);
  const StepResult end = run->step();
  EXPECT_FALSE(end.stepped);
  EXPECT_EQ(end.end_reason, "replay finished");
  EXPECT_TRUE(end.failure.empty());
}

TEST(StudioRun, AnOlderReplayOpensOnItsFirstStepsWatchedLayer) {
  const auto dir = test::temp_dir("studio-run-old");
  auto run = StudioRun::replay(write_recording(dir, 5, -1));
  const ReplayOpening opening = run->replay_opening(StudioConfig{});
  EXPECT_TRUE(opening.first.stepped);
  EXPECT_EQ(opening.layer, 1);
  EXPECT_EQ(opening.head, -1);
  // No settings in the file: the controls show its panes and their budget.
  EXPECT_EQ(opening.settings.policies, (std::vector<std::string>{"full", "streaming", "h2o"}));
  EXPECT_EQ(opening.settings.budget, 24);
  EXPECT_EQ(opening.settings.params.at("sinks"), 2);
  EXPECT_EQ(run->latest_step(), 0);
}

TEST(StudioRun, AReplaySeeksStepsBackAndForwardAndFollowsAtTheNewestStep) {
  const auto dir = test::temp_dir("studio-run-seek");
  auto run = StudioRun::replay(write_recording(dir, 30));
  EXPECT_EQ(run->step_before(), -1);

  // Seeking past what was read reads the replay on to it, without a snapshot a step.
  const StepResult read = run->read_replay_to(12);
  EXPECT_TRUE(read.stepped);
  EXPECT_TRUE(read.end_reason.empty());
  EXPECT_EQ(run->latest_step(), 12);
  EXPECT_EQ(run->seek(12), "");
  EXPECT_TRUE(run->following());
  EXPECT_EQ(shown_step(*run), 12);

  EXPECT_EQ(run->seek(5), "");
  EXPECT_FALSE(run->following());
  EXPECT_EQ(shown_step(*run), 5);
  EXPECT_TRUE(run->snapshot(ViewSelection{}).captures_recorded) << "the captures are read back from the file";
  EXPECT_EQ(run->step_before(), 4);
  EXPECT_EQ(run->engine_seconds_at_shown(), run->snapshot(ViewSelection{}).engine_seconds);

  // Forward through the history: no new step is read.
  const StepResult on = run->step_forward();
  EXPECT_TRUE(on.stepped);
  EXPECT_EQ(shown_step(*run), 6);
  EXPECT_EQ(run->latest_step(), 12);
  EXPECT_EQ(run->advance(), "");
  EXPECT_EQ(shown_step(*run), 7);
  // A paced replay: the next step is due once the pace reached its recorded time.
  EXPECT_FALSE(run->next_step_due(run->engine_seconds_at_shown() - 1));
  EXPECT_TRUE(run->next_step_due(1e9));

  // A replay plays on from the step shown; a step forward at the newest step reads a new one.
  run->start_playing();
  EXPECT_FALSE(run->following());
  EXPECT_EQ(run->seek(11), "");
  run->step_forward();
  EXPECT_TRUE(run->following());
  EXPECT_EQ(shown_step(*run), 12);
  run->step_forward();
  EXPECT_EQ(run->latest_step(), 13);
  EXPECT_EQ(shown_step(*run), 13);
  EXPECT_EQ(run->step_before(), 12);

  // Reading past its end stops there and says why.
  const StepResult end = run->read_replay_to(100);
  EXPECT_EQ(end.end_reason, "replay finished");
  EXPECT_EQ(run->latest_step(), 29);
  EXPECT_EQ(run->seek(100), "");
  EXPECT_TRUE(run->following());
  run->seek(3);
  run->follow();
  EXPECT_EQ(shown_step(*run), 29);
}

TEST(StudioRun, ABrokenLineFailsTheStepAndSaysWhy) {
  const auto dir = test::temp_dir("studio-run-broken");
  const std::string path = write_recording(dir, 3);
  std::ofstream(path, std::ios::app) << "{\"step\": oops\n";
  auto run = StudioRun::replay(path);
  StepResult r = run->read_replay_to(10);
  EXPECT_FALSE(r.stepped && r.failure.empty());
  EXPECT_EQ(r.failure.rfind("Engine step failed: ", 0), 0u) << r.failure;
  EXPECT_TRUE(r.end_reason.empty());
  EXPECT_EQ(run->latest_step(), 2);
  EXPECT_THROW(StudioRun::replay((dir / "missing.jsonl").string()), Error);
}

TEST(StudioRun, ALiveRunsSpoolGoesWithIt) {
  const auto dir = test::temp_dir("studio-run-spool");
  const std::string spool = (dir / "spool.jsonl").string();
  const LiveSetup setup;
  auto run = setup.start(spool);
  EXPECT_TRUE(run->is_live());
  EXPECT_FALSE(run->is_replay());
  EXPECT_TRUE(std::filesystem::exists(spool));
  const RunDescription about = run->describe();
  EXPECT_EQ(about.title, "synthetic:stories260K");
  EXPECT_NE(about.details.find(" · 5 layers × 8 heads ("), std::string::npos) << about.details;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(run->step().stepped);
  EXPECT_GT(std::filesystem::file_size(spool), 0u);
  EXPECT_EQ(count_recorded_steps(spool), 10);
  // Closed (a new model is loading): what was seen stays on show, nothing more runs.
  run->close();
  EXPECT_FALSE(std::filesystem::exists(spool));
  EXPECT_FALSE(run->runs());
  EXPECT_FALSE(run->is_live());
  EXPECT_FALSE(run->step().stepped);
  EXPECT_EQ(shown_step(*run), 9);

  auto second = setup.start(spool);
  ASSERT_TRUE(second->step().stepped);
  EXPECT_TRUE(std::filesystem::exists(spool));
  second.reset();
  EXPECT_FALSE(std::filesystem::exists(spool)) << "the spool goes when the run does";
  // A spool that cannot be made: the run does not start, and says why.
  EXPECT_THROW(setup.start((dir / "no" / "such" / "spool.jsonl").string()), Error);
}

TEST(StudioRun, ALiveRunSeeksThroughItsSpoolAndPlaysFromTheNewestStep) {
  const auto dir = test::temp_dir("studio-run-live-seek");
  const LiveSetup setup;
  auto run = setup.start((dir / "spool.jsonl").string());
  for (int i = 0; i < 20; ++i) run->step();
  EXPECT_FALSE(run->read_replay_to(40).stepped) << "a live run is not read on";
  EXPECT_EQ(run->latest_step(), 19);
  EXPECT_EQ(run->seek(8), "");
  EXPECT_EQ(shown_step(*run), 8);
  EXPECT_TRUE(run->snapshot(ViewSelection{}).captures_recorded) << "read back from the spool";
  run->start_playing();
  EXPECT_TRUE(run->following()) << "a live run cannot rewind its engine";
  EXPECT_EQ(shown_step(*run), 19);
}

// At its limit the spool keeps its newest steps: one warning, a banner that
// names the first step kept each time the ring turns, a file never past the
// limit; the run goes on, and the saved recording replays to the same panes,
// its earlier steps from the checkpoint (their attention not recorded).
TEST(StudioRun, AtItsLimitTheSpoolKeepsItsNewestStepsAndTheWholeHistory) {
  const auto dir = test::temp_dir("studio-run-limit");
  const LiveSetup setup;
  const std::string spool = (dir / "spool.jsonl").string();
  // Room for some hundreds of this model's steps beside its checkpoint (mostly score histories, ~1 MiB).
  constexpr int64_t kLimit = 4 << 20;
  auto run = setup.start(spool, kLimit);
  std::vector<std::string> warnings, banners;
  int steps = 0;
  int64_t largest = 0;
  // Until the ring has turned twice (a step of this model records a few KiB), then 20 steps more.
  for (int after = 0; steps < 20000 && after < 20; ++steps) {
    after += banners.size() >= 2;
    StepResult r = run->step();
    ASSERT_TRUE(r.stepped) << r.end_reason << r.failure;
    for (auto& w : r.warnings)
      if (w.find("recording") != std::string::npos) warnings.push_back(w);
    if (!r.banner.empty()) banners.push_back(r.banner);
    largest = std::max<int64_t>(largest, int64_t(std::filesystem::file_size(spool)));
  }
  EXPECT_LE(largest, kLimit);
  EXPECT_FALSE(std::filesystem::exists(spool + ".turning"));
  ASSERT_EQ(warnings.size(), 1u) << warnings.back();
  std::smatch at;
  ASSERT_TRUE(std::regex_search(warnings[0], at, std::regex("^The recording reached its limit: from now on it keeps its "
                                                            "newest steps in full \\(now from step (\\d+)\\) and the whole "
                                                            "history before them; recordings, logs and reports hold every "
                                                            "step from (\\d+) on in full$")))
      << warnings[0];
  EXPECT_EQ(at[1], at[2]);
  ASSERT_GE(banners.size(), 2u);
  ASSERT_TRUE(std::regex_search(banners.back(), at, std::regex("^Recording keeps every step from (\\d+) on \\(its limit reached\\); "
                                                               "earlier steps keep their tokens and evictions, not their attention\\.$")))
      << banners.back();
  const int64_t first_kept = std::stoll(at[1]);
  EXPECT_GT(first_kept, 50);
  EXPECT_LT(first_kept, steps - 20);
  EXPECT_EQ(run->latest_step(), steps - 1) << "the run goes on";

  // The timeline: a step kept whole shows its attention; one before shows the rest, its attention not recorded.
  const ViewSelection view = setup.view;
  EXPECT_EQ(run->seek(first_kept + 2), "");
  EXPECT_TRUE(run->snapshot(view).captures_recorded);
  EXPECT_EQ(run->seek(first_kept - 30), "");
  const StudioSnapshot before = run->snapshot(view);
  EXPECT_EQ(before.step, first_kept - 30);
  EXPECT_FALSE(before.captures_recorded);
  EXPECT_GT(before.panes[2].cached_tokens, 0);
  run->follow();
  // 40 steps on: the newest step's heatmap then draws only steps the ring keeps. (Its rows reach
  // back some steps; at a step just after the ring's start a replay draws fewer than the live run
  // did, the older rows' steps not being in the file.)
  for (int i = 0; i < 40; ++i) {
    const StepResult r = run->step();
    ASSERT_TRUE(r.stepped);
    EXPECT_EQ(r.warnings.size(), 0u) << r.warnings.front();
  }
  steps += 40;

  // Saved and replayed: the same panes at the newest step, and as many steps.
  const std::string saved = (dir / "saved.jsonl").string();
  run->run_export("running", view).write_recording(saved);
  EXPECT_TRUE(RecordingReader(saved).totals().is_null()) << "the engine's totals cover steps the file lacks";
  auto replay = StudioRun::replay(saved);
  const ReplayOpening opening = replay->replay_opening(StudioConfig{});
  EXPECT_EQ(opening.steps, steps);
  EXPECT_EQ(replay->snapshot(view).step, first_kept) << "a ring's replay opens on its first step kept";
  while (replay->step().stepped) {
  }
  const StudioSnapshot live = run->snapshot(view), again = replay->snapshot(view);
  ASSERT_EQ(again.step, steps - 1);
  ASSERT_EQ(live.panes.size(), again.panes.size());
  for (size_t p = 0; p < live.panes.size(); ++p) {
    test::expect_same_pane(live.panes[p], again.panes[p], "pane " + std::to_string(p));
    EXPECT_EQ(live.panes[p].heatmap.query_positions, again.panes[p].heatmap.query_positions) << "pane " << p;
  }
  EXPECT_EQ(replay->seek(10), "");
  EXPECT_EQ(replay->snapshot(view).step, 10);
  run.reset();
  EXPECT_FALSE(std::filesystem::exists(spool + ".checkpoint")) << "the checkpoint goes with the run";
}

TEST(StudioRun, StatsLineIsTheOneTheSoakScriptReads) {
  const auto dir = test::temp_dir("studio-run-stats");
  const LiveSetup setup;
  auto run = setup.start((dir / "spool.jsonl").string());
  for (int i = 0; i < 5; ++i) run->step();
  const std::string line = run->stats_line(12.4);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, std::regex("h2o-studio stats: seconds 12 step 4 positions (\\d+) rss_bytes (\\d+) "
                                                   "history_bytes (\\d+) bounded_bytes (\\d+) kv_allocated_bytes (\\d+) "
                                                   "spool_bytes (\\d+)")))
      << line;
  EXPECT_GT(std::stoll(m[1]), 0);
  EXPECT_GT(std::stoll(m[3]), 0);
  EXPECT_GT(std::stoll(m[5]), 0);
  EXPECT_EQ(std::stoll(m[6]), int64_t(std::filesystem::file_size(dir / "spool.jsonl")));
  // A replay holds no KV caches and no spool.
  auto replay = StudioRun::replay(write_recording(dir, 3));
  replay->read_replay_to(2);
  EXPECT_NE(replay->stats_line(0).find("step 2 "), std::string::npos);
  EXPECT_NE(replay->stats_line(0).find(" kv_allocated_bytes 0 spool_bytes 0"), std::string::npos) << replay->stats_line(0);
}

TEST(StudioRun, ExportsNameTheRunsFileAndTheViewAtSaveTime) {
  const auto dir = test::temp_dir("studio-run-export");
  const std::string path = write_recording(dir, 4);
  auto replay = StudioRun::replay(path);
  replay->read_replay_to(3);
  ViewSelection view;
  view.layer = 2;
  view.head = 5;
  const RunExport r = replay->run_export("paused", view);
  EXPECT_EQ(r.recording, path);
  EXPECT_EQ(r.replay != nullptr, true);
  EXPECT_EQ(r.engine, nullptr);
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(r.view_layer, 2);
  EXPECT_EQ(r.view_head, 5);

  const std::string spool = (dir / "spool.jsonl").string();
  const LiveSetup setup;
  auto live = setup.start(spool);
  live->step();
  const RunExport l = live->run_export("running", view);
  EXPECT_EQ(l.recording, spool);
  EXPECT_NE(l.engine, nullptr);
  EXPECT_NE(l.spool, nullptr);
  EXPECT_EQ(l.state, "running");
  EXPECT_EQ(l.info.command, "stream");
  ASSERT_NE(l.manifest, nullptr);
  EXPECT_EQ(l.manifest->value("mode", ""), "stream");
  const std::string saved = (dir / "saved.jsonl").string();
  l.write_recording(saved);
  EXPECT_EQ(RecordingReader(saved).header().view_layer, 2);
}

TEST(StudioRun, ATypedPromptQueuesOnlyInALiveRun) {
  const auto dir = test::temp_dir("studio-run-prompt");
  const LiveSetup setup;
  auto live = setup.start((dir / "spool.jsonl").string());
  EXPECT_EQ(live->queue_prompt("hello"), "Queued: “hello” follows the current turn (1 waiting)");
  EXPECT_EQ(live->queue_prompt("again"), "Queued: “again” follows the current turn (2 waiting)");
  auto replay = StudioRun::replay(write_recording(dir, 2));
  EXPECT_THROW(replay->queue_prompt("hello"), Error);
}

TEST(StudioRun, TheViewChoosesTheLayerALiveRunReadsOut) {
  const auto dir = test::temp_dir("studio-run-view");
  LiveSetup setup;
  setup.view.layer = 99;  // clamped to the model's last layer
  auto run = setup.start((dir / "spool.jsonl").string());
  run->step();
  EXPECT_EQ(run->snapshot(ViewSelection{}).capture_layer, 4);
  ViewSelection view;
  view.layer = 2;
  run->apply_view(view);
  run->step();
  EXPECT_EQ(run->snapshot(ViewSelection{}).capture_layer, 2);
}
