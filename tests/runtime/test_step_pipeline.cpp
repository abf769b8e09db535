// The sinks beside the engine (core/runtime/step_pipeline.h): every step
// reaches every sink in order, drain() waits for them, a slow sink thins
// steps by the one rule (never a token, an eviction or a number; thinning
// off keeps everything), a sink's failure is said by the next call; and a
// StudioRun whose sinks run beside its source shows, once settled, exactly
// what a run that takes each step in before the next shows.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "core/base/error.h"
#include "core/runtime/step_pipeline.h"
#include "core/studio/studio_run.h"
#include "tests/assets.h"
#include "tests/studio/same_pane.h"

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

// The loop the pipeline delivers through; its source is never asked (the test pushes).
struct NoSource final : StepSource {
  std::optional<StepRecord> next() override { return std::nullopt; }
  std::string end_reason() const override { return ""; }
};

struct Loop {
  NoSource source;
  RunLoop loop{source};
  explicit Loop(std::initializer_list<StepSink*> sinks) {
    for (StepSink* sink : sinks) loop.add_sink(*sink);
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
  Loop to({&a, &b});
  StepPipeline pipeline(to.loop, state, PipelineOptions{.thinning = false});
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
  Loop to({&slow});
  StepPipeline pipeline(to.loop, state, PipelineOptions{.thinning = true, .thin_at = 4, .capacity = 16});
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

// The window's snapshots run there: after every step taken in, with the state
// free (a snapshot takes it), and never again once cleared.
TEST(StepPipeline, TheAfterStepHookRunsOnTheSinksThreadOutsideTheStateAfterEachStep) {
  std::mutex state;
  KeepingSink sink;
  Loop to({&sink});
  StepPipeline pipeline(to.loop, state, PipelineOptions{.thinning = false});
  const std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  bool state_was_free = true, elsewhere = true;
  size_t seen_when_called = 0;
  bool in_order = true;
  pipeline.set_after_step([&] {
    std::unique_lock lock(state, std::try_to_lock);
    state_was_free = state_was_free && lock.owns_lock();
    elsewhere = elsewhere && std::this_thread::get_id() != caller;
    in_order = in_order && sink.seen.size() == seen_when_called + 1;  // after its step, before the next
    seen_when_called = sink.seen.size();
    ++calls;
  });
  for (int i = 0; i < 50; ++i) pipeline.push(step_with_detail(i));
  pipeline.drain();
  EXPECT_EQ(calls, 50);
  EXPECT_TRUE(state_was_free);
  EXPECT_TRUE(elsewhere);
  EXPECT_TRUE(in_order);
  pipeline.set_after_step({});
  for (int i = 50; i < 60; ++i) pipeline.push(step_with_detail(i));
  pipeline.drain();
  EXPECT_EQ(calls, 50);
  EXPECT_EQ(sink.seen.size(), 60u);
}

TEST(StepPipeline, ASinksFailureIsSaidByTheNextCallAndTheStepsAfterItAreDropped) {
  std::mutex state;
  KeepingSink sink;
  sink.fail_at = 3;
  Loop to({&sink});
  StepPipeline pipeline(to.loop, state, PipelineOptions{.thinning = false});
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

namespace {

// Equal, NaN (a cell with no key) equal to NaN.
bool same_cells(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

std::unique_ptr<StudioRun> llama2_7b_run(const std::filesystem::path& file, const ViewSelection& view) {
  const SyntheticStepsSpec spec = synthetic_steps_spec("llama2-7b", {"full", "streaming", "h2o", "tova"}, 64, 8);
  return StudioRun::synthetic(spec, view, file.string(), 0);
}

}  // namespace

// At Llama-2-7B's shape, four panes: the sinks beside the source show, once
// settled, exactly what a run that takes each step in before the next shows;
// with every step thinned, every view of the watched layer and every number,
// token and raster is still the same, and only the other layers' captures are missing.
TEST(StudioRunBeside, AtLlama2_7bItShowsWhatARunThatKeepsEverythingShows) {
  const auto dir = test::temp_dir("studio-run-beside");
  ViewSelection view;
  view.layer = 2;
  auto keeps_all = llama2_7b_run(dir / "a.jsonl", view);
  auto beside = llama2_7b_run(dir / "b.jsonl", view);
  auto thinned = llama2_7b_run(dir / "c.jsonl", view);
  beside->run_beside(PipelineOptions{.thinning = false, .thin_at = 4, .capacity = 8});
  thinned->run_beside(PipelineOptions{.thinning = true, .thin_at = 0, .capacity = 4});  // every step thinned
  constexpr int kSteps = 160;
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(keeps_all->step().stepped);
    ASSERT_TRUE(beside->step().stepped);
    ASSERT_TRUE(thinned->step().stepped);
    if (i % 40 == 0) (void)beside->snapshot(view);  // read while the sinks run
  }
  EXPECT_EQ(beside->settle(), "");
  EXPECT_EQ(thinned->settle(), "");
  EXPECT_EQ(beside->latest_step(), kSteps - 1);
  EXPECT_EQ(thinned->latest_step(), kSteps - 1);
  for (int head : {-1, 3}) {
    view.head = head;
    const StudioSnapshot a = keeps_all->snapshot(view), b = beside->snapshot(view), c = thinned->snapshot(view);
    EXPECT_EQ(b.step, a.step);
    EXPECT_EQ(c.step, a.step);
    EXPECT_EQ(b.thinned_steps, 0);
    EXPECT_EQ(c.thinned_steps, kSteps);
    ASSERT_EQ(a.panes.size(), 4u);
    for (size_t p = 0; p < a.panes.size(); ++p) {
      const std::string where = "pane " + std::to_string(p) + " head " + std::to_string(head);
      test::expect_same_pane(a.panes[p], b.panes[p], where);
      test::expect_same_pane(a.panes[p], c.panes[p], where + " (thinned)");
      // The watched layer's attention is never thinned.
      EXPECT_TRUE(same_cells(a.panes[p].heatmap.values, b.panes[p].heatmap.values)) << where;
      EXPECT_TRUE(same_cells(a.panes[p].heatmap.values, c.panes[p].heatmap.values)) << where;
      EXPECT_EQ(a.panes[p].heatmap.query_positions, c.panes[p].heatmap.query_positions) << where;
    }
  }
  // Another layer's attention: drawn where every step was kept, "not recorded" where every step was thinned.
  view.layer = 5;
  view.head = -1;
  const StudioSnapshot all = keeps_all->snapshot(view), thin = thinned->snapshot(view);
  EXPECT_GT(all.panes[0].heatmap.rows(), 0);
  EXPECT_EQ(thin.panes[0].heatmap.rows(), 0);
  EXPECT_NE(thin.panes[0].heatmap.note.find("not recorded"), std::string::npos) << thin.panes[0].heatmap.note;
  view.layer = 2;
  EXPECT_EQ(keeps_all->pipeline_times().recording_bytes, beside->pipeline_times().recording_bytes);
  EXPECT_LT(thinned->pipeline_times().recording_bytes, keeps_all->pipeline_times().recording_bytes);
  // The timeline reads the spool back: a seek settles first.
  EXPECT_EQ(beside->seek(120), "");
  EXPECT_EQ(beside->snapshot(view).step, 120);
}
