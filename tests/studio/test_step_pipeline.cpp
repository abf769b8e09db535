// The sinks beside the engine (core/studio/step_pipeline.h): every step
// reaches every sink in order, drain() waits for them, a slow sink thins
// steps by the one rule (never a token, an eviction or a number; thinning
// off keeps everything), a sink's failure is said by the next call; and a
// StudioRun whose sinks run beside its source shows, once settled, exactly
// what a run that takes each step in before the next shows.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/base/error.h"
#include "core/studio/step_pipeline.h"
#include "core/studio/studio_run.h"
#include "tests/assets.h"

using namespace h2o;

namespace {

struct KeepingSink final : StepSink {
  std::vector<StepRecord> seen;
  std::chrono::milliseconds delay{0};
  int64_t fail_at = -1;
  void write(const StepRecord& r) override {
    if (r.step == fail_at) throw Error("the disk is full");
    std::this_thread::sleep_for(delay);
    seen.push_back(r);
  }
};

StepRecord step_with_detail(int64_t n) {
  StepRecord r;
  r.step = n;
  SessionRecord s;
  s.fed = {int(n)};
  s.position = n;
  s.evictions.by_head = {{1, 0, int32_t(n)}};
  s.cached_tokens = int(n % 7);
  for (int layer : {2, 0, 1}) {  // the watched layer's capture first
    AttentionCapture a;
    a.layer = layer;
    s.attention.push_back(a);
  }
  r.sessions.push_back(s);
  return r;
}

}  // namespace

TEST(StepPipeline, StepsReachEverySinkInOrderAndDrainWaitsForThem) {
  std::mutex state;
  KeepingSink a, b;
  StepPipeline pipeline({&a, &b}, nullptr, state, PipelineOptions{.thinning = false});
  for (int i = 0; i < 200; ++i) pipeline.push(step_with_detail(i));
  pipeline.drain();
  std::lock_guard lock(state);
  ASSERT_EQ(a.seen.size(), 200u);
  ASSERT_EQ(b.seen.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(a.seen[size_t(i)].step, i);
    EXPECT_EQ(b.seen[size_t(i)].sessions[0].attention.size(), 3u);
  }
  EXPECT_EQ(pipeline.thinned_steps(), 0);
}

TEST(StepPipeline, ASlowSinkThinsStepsButKeepsEveryTokenEvictionAndNumber) {
  std::mutex state;
  KeepingSink slow;
  slow.delay = std::chrono::milliseconds(2);
  StepPipeline pipeline({&slow}, nullptr, state, PipelineOptions{.thinning = true, .thin_at = 4, .capacity = 16});
  for (int i = 0; i < 120; ++i) pipeline.push(step_with_detail(i));
  pipeline.drain();
  std::lock_guard lock(state);
  ASSERT_EQ(slow.seen.size(), 120u);
  int thinned = 0;
  for (int i = 0; i < 120; ++i) {
    const StepRecord& r = slow.seen[size_t(i)];
    const StepRecord whole = step_with_detail(i);
    EXPECT_EQ(r.step, i);
    EXPECT_EQ(r.sessions[0].fed, whole.sessions[0].fed);
    EXPECT_EQ(r.sessions[0].evictions, whole.sessions[0].evictions);
    EXPECT_EQ(r.sessions[0].cached_tokens, whole.sessions[0].cached_tokens);
    // Thinned: the watched layer's capture only, and marked.
    ASSERT_EQ(r.sessions[0].attention.size(), r.thinned ? 1u : 3u);
    EXPECT_EQ(r.sessions[0].attention[0].layer, 2);
    thinned += r.thinned;
  }
  EXPECT_GT(thinned, 60);  // pushed at once: nearly every step past the fourth waits
  EXPECT_EQ(pipeline.thinned_steps(), thinned);
}

TEST(StepPipeline, ASinksFailureIsSaidByTheNextCallAndTheStepsAfterItAreDropped) {
  std::mutex state;
  KeepingSink sink;
  sink.fail_at = 3;
  StepPipeline pipeline({&sink}, nullptr, state, PipelineOptions{.thinning = false});
  for (int i = 0; i < 6; ++i) {
    try {
      pipeline.push(step_with_detail(i));
    } catch (const Error&) {
    }
  }
  EXPECT_THROW(
      {
        pipeline.drain();
        pipeline.push(step_with_detail(6));
        pipeline.drain();
      },
      Error);
  std::lock_guard lock(state);
  ASSERT_GE(sink.seen.size(), 3u);
  EXPECT_EQ(sink.seen[2].step, 2);
  for (const StepRecord& r : sink.seen) EXPECT_LT(r.step, 3);
}

TEST(StudioRunBeside, OnceSettledItShowsWhatARunThatTakesEachStepInBeforeTheNextShows) {
  const auto dir = test::temp_dir("studio-run-beside");
  StudioConfig config;
  config.policies = {"full", "streaming", "h2o", "tova"};
  config.budget = 48;
  config.slack = 8;
  SyntheticStepsSpec spec;
  spec.shape = "stories15M";
  spec.policies = studio_policies(config);
  ViewSelection view;
  view.layer = 2;
  auto in_turn = StudioRun::synthetic(spec, view, (dir / "a.jsonl").string(), 0);
  auto beside = StudioRun::synthetic(spec, view, (dir / "b.jsonl").string(), 0);
  beside->run_beside(PipelineOptions{.thinning = false, .thin_at = 4, .capacity = 8});
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(in_turn->step().stepped);
    ASSERT_TRUE(beside->step().stepped);
    if (i % 50 == 0) (void)beside->snapshot(view);  // read while the sinks run
  }
  EXPECT_EQ(beside->settle(), "");
  EXPECT_EQ(beside->latest_step(), 299);
  for (int head : {-1, 3}) {
    view.head = head;
    const StudioSnapshot a = in_turn->snapshot(view), b = beside->snapshot(view);
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(b.thinned_steps, 0);
    ASSERT_EQ(a.panes.size(), b.panes.size());
    for (size_t p = 0; p < a.panes.size(); ++p) {
      EXPECT_EQ(a.panes[p].cached_tokens, b.panes[p].cached_tokens);
      EXPECT_EQ(a.panes[p].overview.cells, b.panes[p].overview.cells);
      EXPECT_EQ(a.panes[p].detail.cells, b.panes[p].detail.cells);
      EXPECT_EQ(a.panes[p].heatmap.query_positions, b.panes[p].heatmap.query_positions);
    }
  }
  EXPECT_EQ(in_turn->pipeline_times().recording_bytes, beside->pipeline_times().recording_bytes);
  // The timeline reads the spool back: a seek settles first.
  EXPECT_EQ(beside->seek(120), "");
  EXPECT_EQ(beside->snapshot(view).step, 120);
}
