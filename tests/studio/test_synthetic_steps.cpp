// The synthetic step source (core/studio/synthetic_steps.h): records of a
// real shape that fit a recording of that shape, evictions at each policy's
// real rate (per head for H2O and TOVA, everywhere at once for StreamingLLM,
// none for the full cache), captures as the app's schedule asks, the same
// records for the same spec; and StudioRun fed by it records what it shows.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "core/base/json_text.h"
#include "core/studio/studio_run.h"
#include "core/studio/synthetic_steps.h"
#include "tests/assets.h"

using namespace h2o;

namespace {

SyntheticStepsSpec spec_of(const std::string& shape, int budget, int slack) {
  return synthetic_steps_spec(shape, {"full", "streaming", "h2o", "tova"}, budget, slack);
}

enum Pane { kFull, kStreaming, kH2o, kTova };

// Equal, NaN (a cell with no key) equal to NaN.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

TEST(SyntheticSteps, EachPolicyEvictsAtItsRealRateAndEveryRecordFitsItsHeader) {
  const StudioCaptureSchedule schedule(3);
  SyntheticStepSource source(spec_of("tinyllama-1.1b", 64, 0), schedule);
  const RecordingHeader header = source.header();
  ASSERT_EQ(header.layers, 22);
  ASSERT_EQ(header.kv_heads, 4);
  const int64_t heads = int64_t(header.layers) * header.kv_heads;
  int decode_steps_checked = 0, parted = 0;
  for (int i = 0; i < 400; ++i) {
    const StepRecord r = *source.next();
    ASSERT_NO_THROW(check_step_fits(r, header)) << "step " << r.step;
    ASSERT_EQ(r.sessions.size(), 4u);
    EXPECT_TRUE(r.sessions[kFull].evictions.empty());
    EXPECT_TRUE(r.sessions[kStreaming].evictions.by_head.empty());
    // Once the caches are full, a decode step at slack 0 evicts one token per (layer, KV head).
    if (r.phase != Phase::Decode || r.sessions[kH2o].position < 80) continue;
    ++decode_steps_checked;
    EXPECT_EQ(r.sessions[kStreaming].evictions.everywhere.size(), 1u);
    for (Pane p : {kH2o, kTova}) {
      const EvictionSummary& e = r.sessions[p].evictions;
      EXPECT_EQ(e.count(header.layers, header.kv_heads), heads) << "pane " << p << " step " << r.step;
      EXPECT_EQ(r.sessions[p].cached_tokens, 64);
    }
    // H2O's heads part ways: most steps, not every head evicts the same position.
    parted += !r.sessions[kH2o].evictions.by_head.empty();
  }
  EXPECT_GT(decode_steps_checked, 200);
  EXPECT_GT(parted, decode_steps_checked * 3 / 4);
}

TEST(SyntheticSteps, AtADevicesSlackEachHeadIsCutBackToTheBudgetOnceEverySlackPlusOneSteps) {
  const StudioCaptureSchedule schedule(0);
  SyntheticStepSource source(spec_of("stories15M", 64, 16), schedule);
  const RecordingHeader header = source.header();
  std::vector<int64_t> cut_steps;
  for (int i = 0; i < 600; ++i) {
    const StepRecord r = *source.next();
    const SessionRecord& h2o = r.sessions[kH2o];
    if (h2o.evictions.empty()) {
      EXPECT_LE(h2o.cached_tokens, 64 + 16);
      continue;
    }
    EXPECT_EQ(h2o.cached_tokens, 64) << "step " << r.step;
    if (r.phase == Phase::Decode && h2o.position > 200) {
      EXPECT_EQ(h2o.evictions.count(header.layers, header.kv_heads), 17 * header.layers * header.kv_heads);
      cut_steps.push_back(r.step);
    }
  }
  ASSERT_GE(cut_steps.size(), 4u);
  int regular = 0;
  for (size_t i = 1; i < cut_steps.size(); ++i) regular += cut_steps[i] - cut_steps[i - 1] == 17;
  EXPECT_GE(regular, int(cut_steps.size()) / 2);  // a prefill step cuts out of turn
}

TEST(SyntheticSteps, CapturesFollowTheAppsScheduleAndLookLikeATrainedModels) {
  const StudioCaptureSchedule schedule(2);
  SyntheticStepSource source(spec_of("tinyllama-1.1b", 256, 0), schedule);
  for (int i = 0; i < 300; ++i) {
    const StepRecord r = *source.next();
    for (const SessionRecord& s : r.sessions) {
      ASSERT_FALSE(s.attention.empty());
      const AttentionCapture& watched = s.attention.front();
      EXPECT_EQ(watched.layer, 2);
      EXPECT_EQ(watched.probs.size(), 32u);  // every query head
      EXPECT_EQ(watched.top_share.size(), 32u);
      EXPECT_EQ(s.attention.size(), r.step % kAllLayersEvery == 0 ? 22u : 1u);
      for (const AttentionCapture& a : s.attention) {
        const int max_keys = &a == &watched ? kRecordedKeys : all_layers_keys(22, 32);
        for (const auto& keys : a.key_positions) EXPECT_LE(int(keys.size()), max_keys);
        for (const auto& row : a.probs) {
          const float sum = std::accumulate(row.begin(), row.end(), 0.0f);
          EXPECT_GT(sum, 0.3f);
          EXPECT_LE(sum, 1.0001f);
          // The first sink takes a visible share of every row.
          EXPECT_GT(row.front(), 0.02f);
        }
      }
    }
  }
}

TEST(SyntheticSteps, TheSameSpecGivesTheSameRecords) {
  const StudioCaptureSchedule schedule(1);
  SyntheticStepSource a(spec_of("stories15M", 64, 8), schedule), b(spec_of("stories15M", 64, 8), schedule);
  for (int i = 0; i < 150; ++i) EXPECT_EQ(recording_step_line(*a.next()), recording_step_line(*b.next()));
}

TEST(SyntheticSteps, AStudioRunFedByItRecordsWhatItShowed) {
  const auto dir = test::temp_dir("synthetic-run");
  ViewSelection view;
  view.layer = 1;
  auto run = StudioRun::synthetic(spec_of("stories15M", 48, 4), view, (dir / "spool.jsonl").string(), 0);
  EXPECT_FALSE(run->is_live());
  EXPECT_FALSE(run->is_replay());
  for (int i = 0; i < 250; ++i) ASSERT_TRUE(run->step().stepped);
  const PipelineTimes t = run->pipeline_times();
  EXPECT_EQ(t.steps, 250);
  EXPECT_GT(t.recording_bytes, 250 * 1000);
  EXPECT_GT(t.encode_s, 0);
  const std::string saved = (dir / "saved.jsonl").string();
  run->run_export("paused", view).write_recording(saved);
  const StudioSnapshot shown = run->snapshot(view);
  run.reset();

  auto replay = StudioRun::replay(saved);
  const ReplayOpening opening = replay->replay_opening(StudioConfig{});
  EXPECT_EQ(opening.layer, 1);
  EXPECT_EQ(opening.steps, 250);
  while (replay->step().stepped) {
  }
  const StudioSnapshot replayed = replay->snapshot(view);
  EXPECT_EQ(replayed.step, shown.step);
  ASSERT_EQ(replayed.panes.size(), shown.panes.size());
  for (size_t p = 0; p < shown.panes.size(); ++p) {
    EXPECT_EQ(replayed.panes[p].cached_tokens, shown.panes[p].cached_tokens);
    EXPECT_EQ(replayed.panes[p].stream_length, shown.panes[p].stream_length);
    EXPECT_TRUE(same_values(replayed.panes[p].heatmap.values, shown.panes[p].heatmap.values)) << "pane " << p;
    EXPECT_EQ(replayed.panes[p].overview.cells, shown.panes[p].overview.cells);
  }
}
