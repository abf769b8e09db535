// The capture window holds a layer state as much as the views draw of it
// (core/analysis/held_state.h): the full cache's state, which grows with the
// stream, shrinks to a few hundred entries a head, and every view drawn from
// it is what the whole state draws.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/analysis/analyzer.h"
#include "core/analysis/held_state.h"
#include "core/studio/synthetic_steps.h"

using namespace h2o;

namespace {

// A head's entries at the given positions, each scored at random (ties included: scores on a coarse grid).
LayerState random_state(int kv_heads, const std::vector<int32_t>& positions, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> grid(0, 400);
  LayerState s;
  s.layer = 3;
  for (int kv = 0; kv < kv_heads; ++kv) {
    s.positions.push_back(positions);
    std::vector<float> scores;
    for (size_t i = 0; i < positions.size(); ++i) scores.push_back(float(grid(rng)) / 8.0f);
    s.scores.push_back(std::move(scores));
  }
  return s;
}

// The analyzer's rule for the top heavy hitter of one head: the first entry of
// the best score past -1 among positions in [sinks, end).
int64_t best_between(const std::vector<int32_t>& positions, const std::vector<float>& scores, int sinks, int64_t end) {
  int64_t best = -1;
  float best_score = -1;
  for (size_t i = 0; i < positions.size(); ++i)
    if (positions[i] >= sinks && positions[i] < end && scores[i] > best_score) {
      best_score = scores[i];
      best = positions[i];
    }
  return best;
}

void expect_same_rank(const ScoreRank& a, const ScoreRank& b, const std::string& where) {
  EXPECT_EQ(a.rank, b.rank) << where;
  EXPECT_EQ(a.score, b.score) << where;
  EXPECT_EQ(a.fit.points, b.fit.points) << where;
  EXPECT_DOUBLE_EQ(a.fit.slope, b.fit.slope) << where;
}

}  // namespace

TEST(HeldState, AFullCachesStateKeepsItsEndsAndRanksEveryScore) {
  std::vector<int32_t> positions(20000);
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = int32_t(i);
  const LayerState state = random_state(4, positions, 1);
  const HeldState held = hold_state(77, state, 4);
  EXPECT_EQ(held.step, 77);
  ASSERT_EQ(held.kept.positions.size(), 4u);
  std::vector<float> all;
  for (size_t kv = 0; kv < 4; ++kv) {
    const auto& kept = held.kept.positions[kv];
    // The first kRecordedFirstKeys and the latest kRecordedKeys (the heatmap's columns), and a few prefix maxima.
    ASSERT_GE(kept.size(), size_t(kRecordedFirstKeys + kRecordedKeys));
    EXPECT_LT(kept.size(), size_t(kRecordedFirstKeys + kRecordedKeys + 64));
    EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
    for (int i = 0; i < kRecordedFirstKeys; ++i) EXPECT_EQ(kept[size_t(i)], i);
    EXPECT_EQ(kept.back(), 19999);
    EXPECT_EQ(kept[kept.size() - size_t(kRecordedKeys)], 20000 - kRecordedKeys);
    EXPECT_EQ(held.kept.scores[kv].size(), kept.size());
    expect_same_rank(held.rank(int(kv)), score_rank(state.scores[kv], HeldState::kRankPoints), "KV head " + std::to_string(kv));
    all.insert(all.end(), state.scores[kv].begin(), state.scores[kv].end());
  }
  expect_same_rank(held.rank(-1), score_rank(all, HeldState::kRankPoints), "every KV head");
  // Within its whole size a head is kept as read.
  const HeldState small = hold_state(1, random_state(2, std::vector<int32_t>(positions.begin(), positions.begin() + 1000), 2), 4);
  EXPECT_EQ(small.kept.positions[1].size(), 1000u);
}

TEST(HeldState, TheTopHeavyHitterOfAnyStretchIsAmongTheKeptEntries) {
  // An evicting cache's positions: sparse, ascending, past the whole size.
  std::mt19937 rng(5);
  std::vector<int32_t> positions;
  for (int32_t p = 0; positions.size() < 6000; p += 1 + int32_t(rng() % 5)) positions.push_back(p);
  const LayerState state = random_state(2, positions, 9);
  for (const int sinks : {0, 4, 40}) {
    const HeldState held = hold_state(0, state, sinks);
    for (size_t kv = 0; kv < 2; ++kv) {
      EXPECT_LT(held.kept.positions[kv].size(), 1000u);
      for (int64_t end = 0; end <= positions.back() + 1; end += 37)
        ASSERT_EQ(best_between(held.kept.positions[kv], held.kept.scores[kv], sinks, end),
                  best_between(state.positions[kv], state.scores[kv], sinks, end))
            << "sinks " << sinks << ", stretch up to " << end;
    }
  }
}

// The views at a real run's states: a window that holds what they draw shows
// what one that keeps every state whole shows (the full pane's past its whole
// size after 512 steps; the others, budget 256, never).
TEST(HeldState, TheAnalyzersViewsAreWhatTheWholeStatesDraw) {
  StudioCaptureSchedule schedule;
  SyntheticStepSource source(synthetic_steps_spec("stories15M", {"full", "streaming", "h2o", "tova"}, 256, 0), schedule);
  const RecordingHeader header = source.header();
  Analyzer trimmed(header, 4096, HeadEvictions::kExactPositions, 512), whole(header, 4096, HeadEvictions::kExactPositions, size_t(1) << 40);
  int checked = 0;
  for (int64_t steps = 1; steps <= 1800; ++steps) {
    const StepRecord record = *source.next();
    trimmed.ingest(record);
    whole.ingest(record);
    if (steps % 300 != 0) continue;
    for (const int head : {-1, 0, 5}) {
      ViewSelection view;
      view.layer = schedule.layer();
      view.head = head;
      const StudioSnapshot a = trimmed.snapshot(view), b = whole.snapshot(view);
      EXPECT_EQ(a.inspection.position, b.inspection.position) << "step " << steps << " head " << head;
      for (size_t p = 0; p < a.panes.size(); ++p) {
        const std::string where = "step " + std::to_string(steps) + " head " + std::to_string(head) + " pane " + std::to_string(p);
        const auto& ha = a.panes[p].heatmap;
        const auto& hb = b.panes[p].heatmap;
        EXPECT_EQ(ha.columns, hb.columns) << where;
        ASSERT_EQ(ha.column_scores.size(), hb.column_scores.size()) << where;
        for (size_t c = 0; c < ha.column_scores.size(); ++c)
          if (!std::isnan(hb.column_scores[c]) || !std::isnan(ha.column_scores[c])) {
            EXPECT_DOUBLE_EQ(ha.column_scores[c], hb.column_scores[c]) << where << " column " << c;
          }
        expect_same_rank(a.panes[p].score_rank, b.panes[p].score_rank, where);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 3 * 4);
  // The full pane's state, held: kept in part, against the whole state the other window keeps.
  const HeldState* full = trimmed.live_window().state(0, schedule.layer());
  const HeldState* full_whole = whole.live_window().state(0, schedule.layer());
  ASSERT_NE(full, nullptr);
  ASSERT_NE(full_whole, nullptr);
  ASSERT_EQ(full->step, full_whole->step);
  size_t kept = 0, read = 0;
  for (const auto& p : full->kept.positions) kept += p.size();
  for (const auto& p : full_whole->kept.positions) read += p.size();
  EXPECT_GT(read, 2 * kept);
}
