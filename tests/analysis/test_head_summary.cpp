// The per-head history's summary (core/analysis/head_summary.h): once a
// policy's older per-head eviction steps are summarised, its whole-stream
// raster of any head is still, cell for cell, what the exact steps draw at
// that raster's columns and rows — at the newest step and at an older one —
// while the newest positions, the layer's merged steps and everything a head
// still holds stay exact, a checkpoint keeps it, and the bytes no longer grow
// by two a position a head.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "core/analysis/analyzer.h"
#include "core/analysis/stream_history.h"
#include "core/analysis/survival.h"
#include "core/base/packed_bytes.h"
#include "core/recording/checkpoint_stream.h"
#include "core/studio/synthetic_steps.h"

using namespace h2o;

namespace {

constexpr int kLayers = 2, kHeads = 3;

PolicyConfig small_h2o() { return PolicyConfig::named("h2o").set("sinks", 4).set("heavy", 28).set("recent", 32); }

// An H2O-like run of `steps` steps, one position each (every 50th step a
// prompt of 40): each head keeps the sinks, the recent 32 and the 28 best of
// a fixed random score of its own, so a few positions live for thousands of
// steps and most leave soon after their recent window — into both histories.
// `cut_recent`: now and then a head also lets a recent position go (no policy
// does; the summary then keeps that group's recent steps instead of deriving them).
void run(std::vector<PolicyHistory*> histories, int64_t steps, int slack, bool cut_recent = false) {
  const EvictionRule rule = histories.front()->rule();
  std::mt19937 rng(11);
  std::vector<std::vector<int64_t>> held(kLayers * kHeads);
  std::vector<std::vector<float>> score(kLayers * kHeads);
  int64_t length = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const int fed = step % 50 == 0 ? 40 : 1;
    for (int i = 0; i < fed; ++i, ++length) {
      for (PolicyHistory* h : histories) h->feed(int(length % 100), "t", i > 0, step);
      for (size_t head = 0; head < held.size(); ++head) {
        held[head].push_back(length);
        // A heavy tail: most scores small, a few large enough to stay for thousands of steps.
        score[head].push_back(std::pow(float(rng() % 10000) / 10000.0f, 8.0f));
      }
    }
    if (cut_recent && step % 97 == 0 && length > rule.recent + rule.sinks) {
      const size_t head = rng() % held.size();
      const int64_t p = length - 1 - int64_t(rng() % uint32_t(rule.recent));
      auto& h = held[head];
      if (const auto it = std::find(h.begin(), h.end(), p); it != h.end()) {
        h.erase(it);
        for (PolicyHistory* hist : histories) hist->evict(int(head) / kHeads, int(head) % kHeads, p, step);
      }
    }
    for (size_t head = 0; head < held.size(); ++head) {
      auto& h = held[head];
      if (int64_t(h.size()) <= rule.budget + slack) continue;
      // Candidates: neither a sink nor among the recent; the lowest scores leave.
      std::vector<int64_t> candidates;
      for (int64_t p : h)
        if (p >= rule.sinks && p < length - rule.recent) candidates.push_back(p);
      const size_t leave = h.size() - size_t(rule.budget);
      std::partial_sort(candidates.begin(), candidates.begin() + int64_t(leave), candidates.end(),
                        [&](int64_t a, int64_t b) { return score[head][size_t(a)] < score[head][size_t(b)]; });
      for (size_t i = 0; i < leave; ++i) {
        for (PolicyHistory* hist : histories)
          hist->evict(int(head) / kHeads, int(head) % kHeads, candidates[i], step);
        h.erase(std::find(h.begin(), h.end(), candidates[i]));
      }
    }
    for (PolicyHistory* h : histories) h->end_step(step, PaneStep{}, nullptr);
  }
}

// The raster's cells from exact steps, cell by cell: each position's fate
// intervals (position_fates) marked in its column over the rows they cross,
// the most telling fate winning — written apart from survival_raster.
std::vector<uint8_t> cells_by_hand(const SurvivalRaster& layout, const EvictionRule& rule,
                                   const std::vector<int32_t>& birth, const std::vector<int32_t>& evicted) {
  std::vector<uint8_t> cells(size_t(layout.rows) * size_t(layout.cols), uint8_t(Fate::Unborn));
  const auto row_of = [&](int64_t s) { return int((s - layout.first_step) * layout.rows / layout.steps()); };
  for (int64_t p = layout.first_position; p < layout.end_position; ++p) {
    const int64_t later = p + rule.recent;
    const int64_t recent_end = later < int64_t(birth.size()) ? birth[size_t(later)] : kNeverStep;
    const int col = layout.column_of(p);
    position_fates(rule, p, birth[size_t(p)], recent_end, evicted[size_t(p)] < 0 ? kNeverStep : evicted[size_t(p)],
                   [&](Fate fate, int64_t from, int64_t to) {
                     from = std::max(from, layout.first_step);
                     to = std::min(to, layout.last_step + 1);
                     for (int row = from < to ? row_of(from) : layout.rows; from < to && row <= row_of(to - 1); ++row) {
                       uint8_t& c = cells[size_t(row) * size_t(layout.cols) + size_t(col)];
                       if (fate_priority(fate) > fate_priority(Fate(c))) c = uint8_t(fate);
                     }
                   });
  }
  return cells;
}

}  // namespace

TEST(HeadSummary, AHeadsWholeStreamRasterFromItsSummaryIsWhatItsExactStepsDraw) {
  for (const auto& [slack, cut_recent] : {std::pair{0, false}, std::pair{16, false}, std::pair{0, true}}) {
    PolicyConfig policy = small_h2o();
    policy.slack = slack;
    PolicyHistory summarised(policy, kLayers, kHeads, HeadEvictions::kBlock);
    PolicyHistory exact(policy, kLayers, kHeads, int64_t(1) << 40);
    run({&summarised, &exact}, 12000, slack, cut_recent);
    const int64_t length = summarised.length();
    ASSERT_GT(summarised.per_head_exact_from(), 3 * HeadEvictions::kBlock) << "slack " << slack;
    ASSERT_EQ(exact.per_head_exact_from(), 0);
    const int64_t exact_from = summarised.per_head_exact_from();
    for (int layer = 0; layer < kLayers; ++layer) {
      // The layer's merged steps are exact everywhere.
      ASSERT_EQ(summarised.evictions(layer, -1), exact.evictions(layer, -1)) << "layer " << layer;
      for (int kv = 0; kv < kHeads; ++kv) {
        const std::vector<int32_t> steps = exact.evictions(layer, kv), shown = summarised.evictions(layer, kv);
        const std::vector<int32_t> merged = exact.evictions(layer, -1);
        int kept_exactly = 0;
        for (int64_t p = 0; p < length; ++p) {
          const bool own = summarised.head_step_exact(layer, kv, p);
          // The newest positions, and any a head still holds, keep the head's own step; others show the layer's.
          if (p >= exact_from || steps[size_t(p)] < 0) {
            ASSERT_TRUE(own) << "position " << p;
          }
          ASSERT_EQ(shown[size_t(p)], own ? steps[size_t(p)] : merged[size_t(p)]) << "position " << p;
          ASSERT_EQ(summarised.evicted_at(layer, kv, p), shown[size_t(p)]) << "position " << p;
          kept_exactly += p < exact_from && own;
        }
        EXPECT_GT(kept_exactly, 4) << "the sinks and the long-lived heavy hitters";
        // The whole-stream raster, at the newest step and at two older ones, at the app's size and a small one.
        for (const int64_t step : {int64_t(11999), int64_t(7000), int64_t(2500)}) {
          const int64_t end = summarised.length_at(step);
          for (const auto& [cols, rows] : {std::pair{480, 64}, std::pair{37, 11}}) {
            const SurvivalRaster r = summarised.overview(layer, kv, shown, end, 0, step, cols, rows);
            const std::string where = "layer " + std::to_string(layer) + " kv " + std::to_string(kv) + " step " +
                                      std::to_string(step) + " " + std::to_string(cols) + "x" + std::to_string(rows);
            ASSERT_EQ(r.position_unit, HeadSummary::kGroup) << where;
            EXPECT_EQ(r.cells, cells_by_hand(r, policy.rule(), exact.birth(), steps)) << where;
            // Columns bin whole groups past the sinks' own column.
            for (int c = 1; c < r.cols; ++c) {
              const int64_t first = r.column_first(c);
              EXPECT_TRUE(first <= r.sinks_end || first % HeadSummary::kGroup == 0) << where << " column " << c;
            }
          }
        }
      }
    }
    // The summary: under a byte a position a head (the exact table: 2), besides the newest 4096 to 8191 positions.
    const int64_t heads = kLayers * kHeads, block = HeadEvictions::kBlock;
    const int64_t exact_part = (length - exact_from + block - 1) / block * block * heads * 2;
    EXPECT_LT(summarised.head_bytes() - exact_part, exact_from * heads) << "under a byte a position a head; slack " << slack;
  }
}

TEST(HeadSummary, ACheckpointKeepsTheSummaryAndAnOlderExactCheckpointIsSummarisedOnReading) {
  PolicyHistory summarised(small_h2o(), kLayers, kHeads, HeadEvictions::kBlock);
  PolicyHistory exact(small_h2o(), kLayers, kHeads, int64_t(1) << 40);
  run({&summarised, &exact}, 9000, 0);
  ASSERT_GT(summarised.per_head_exact_from(), 0);
  for (PolicyHistory* source : {&summarised, &exact}) {
    std::ostringstream frame;
    {
      CheckpointWriter out(frame);
      source->save(out);
      out.finish();
    }
    const std::string raw = unpack_checkpoint(frame.str(), kMaxCheckpointBytes);
    PackedReader in(raw, "checkpoint");
    PolicyHistory back(small_h2o(), kLayers, kHeads, HeadEvictions::kBlock);
    back.load(in, 0, 9000);
    // Read into a history that summarises: what it shows is the summarised history's.
    EXPECT_EQ(back.per_head_exact_from(), summarised.per_head_exact_from());
    for (int layer = 0; layer < kLayers; ++layer) {
      EXPECT_EQ(back.evictions(layer, -1), summarised.evictions(layer, -1));
      for (int kv = 0; kv < kHeads; ++kv) {
        const std::vector<int32_t> shown = back.evictions(layer, kv);
        EXPECT_EQ(shown, summarised.evictions(layer, kv)) << layer << "/" << kv;
        EXPECT_EQ(back.overview(layer, kv, shown, back.length(), 0, 8999, 480, 64).cells,
                  summarised.overview(layer, kv, shown, summarised.length(), 0, 8999, 480, 64).cells);
      }
    }
  }
}

// The analyzer at a real shape: every view at the layer is what a run that
// keeps every head's steps shows, and so is every view at a head over the
// positions it keeps exactly.
TEST(HeadSummary, TheAnalyzersLayerViewsAreUnchangedAndItsHeadViewsExactWhereKept) {
  StudioCaptureSchedule schedule;
  SyntheticStepSource source(synthetic_steps_spec("stories15M", {"full", "streaming", "h2o", "tova"}, 256, 0), schedule);
  const RecordingHeader header = source.header();
  Analyzer summarised(header, 4096, HeadEvictions::kBlock), exact(header, 4096, int64_t(1) << 40);
  int64_t steps = 0;
  while (steps < 7000) {
    const StepRecord record = *source.next();
    summarised.ingest(record);
    exact.ingest(record);
    ++steps;
  }
  ASSERT_GT(summarised.snapshot(ViewSelection{}).panes[0].stream_length, 2 * HeadEvictions::kBlock);
  for (const int head : {-1, 0, 5}) {
    ViewSelection view;
    view.layer = 2;
    view.head = head;
    const StudioSnapshot a = summarised.snapshot(view), b = exact.snapshot(view);
    ASSERT_EQ(a.panes.size(), 4u);
    for (size_t p = 0; p < a.panes.size(); ++p) {
      const std::string where = "head " + std::to_string(head) + " pane " + std::to_string(p);
      EXPECT_EQ(a.panes[p].stream_length, b.panes[p].stream_length) << where;
      EXPECT_EQ(a.panes[p].detail.cells, b.panes[p].detail.cells) << where;  // the newest positions: exact
      ASSERT_EQ(a.panes[p].tokens.size(), b.panes[p].tokens.size()) << where;
      for (size_t t = 0; t < a.panes[p].tokens.size(); ++t)
        EXPECT_EQ(int(a.panes[p].tokens[t].fate), int(b.panes[p].tokens[t].fate)) << where;
      if (head < 0 || !a.panes[p].config.evicts() || a.panes[p].config.name() == "streaming") {
        EXPECT_EQ(a.panes[p].overview.cells, b.panes[p].overview.cells) << where;
        EXPECT_EQ(a.panes[p].head_summarised_before, 0) << where;
      } else {
        EXPECT_GT(a.panes[p].head_summarised_before, 0) << where;
        EXPECT_EQ(a.panes[p].overview.position_unit, HeadSummary::kGroup) << where;
        // The head's whole-stream raster: what its exact steps draw at the same columns and rows.
        const PolicyHistory& h = exact.history(p);
        EXPECT_EQ(a.panes[p].overview.cells,
                  cells_by_hand(a.panes[p].overview, h.rule(), h.birth(), h.evictions(view.layer, head / (header.heads / header.kv_heads))))
            << where;
      }
    }
  }
  EXPECT_LT(summarised.history_bytes(), exact.history_bytes());
}


// A group's recent steps follow from the births, except where a position left
// while among the recent: then the group keeps its own, and they end where it left.
TEST(HeadSummary, AGroupWhosePositionLeftWhileRecentKeepsItsOwnRecentSteps) {
  EvictionRule rule;
  rule.recent = 4;
  rule.by_score = 4;
  rule.score = kAccumulatedScore;
  rule.budget = 8;
  std::vector<int32_t> birth(128);
  for (size_t p = 0; p < birth.size(); ++p) birth[p] = int32_t(p);  // one position a step
  for (const bool cut_last : {false, true}) {
    HeadSummary summary(1);
    // Every position leaves 10 steps after its recent window; the group's last, maybe, one step after its birth.
    summary.add_group(rule, birth, [&](int64_t, int64_t i) { return cut_last && i == 63 ? 64 : int32_t(i) + 4 + 10; });
    ASSERT_EQ(summary.exact(0, 63), nullptr);
    int64_t recent_end = 0, evicted_from = kNeverStep;
    summary.for_each_span(0, 0, 64, rule, birth, [&](int64_t, Fate fate, int64_t from, int64_t to) {
      if (fate == Fate::Recent) recent_end = std::max(recent_end, to);
      if (fate == Fate::Evicted) evicted_from = std::min(evicted_from, from);
    });
    // Position 62 is recent until position 66 is fed; 63 until 67 unless it left at 64.
    EXPECT_EQ(recent_end, cut_last ? 66 : 67) << cut_last;
    EXPECT_EQ(evicted_from, 14) << cut_last;  // position 0, either way
  }
}

// The inspector at Llama-2-7B's 32 KV heads: one score line a policy, the
// mean over the KV heads that held the token at each step (32 dashed lines
// and their legend filled the plot); with a head chosen, that head's own.
TEST(InspectorScoreLines, PastFourKvHeadsTheMeanAndWithAHeadChosenItsOwn) {
  StudioCaptureSchedule schedule;
  SyntheticStepSource source(synthetic_steps_spec("llama2-7b", {"full", "streaming", "h2o", "tova"}, 64, 8), schedule);
  const RecordingHeader header = source.header();
  ASSERT_EQ(header.kv_heads, 32);
  Analyzer analyzer(header);
  for (int i = 0; i < 600; ++i) analyzer.ingest(*source.next());
  ViewSelection view;
  view.max_tokens = 1;
  view.overview_columns = view.overview_rows = view.detail_positions = view.detail_rows = view.heatmap_rows = 1;
  const InspectionSnapshot mean = analyzer.snapshot(view).inspection;
  ASSERT_GE(mean.position, 0) << "H2O has a heavy hitter to follow";
  const size_t h2o = 2;
  ASSERT_EQ(mean.policies[h2o].score_lines.size(), 1u);
  const auto& line = mean.policies[h2o].score_lines[0];
  EXPECT_EQ(line.kv_head, -1);
  ASSERT_FALSE(line.series.x.empty());
  // The same position, each KV head chosen in turn: its own line; their mean at each step is the mean line.
  view.inspect_position = mean.position;
  const int group = header.heads / header.kv_heads;
  std::map<double, std::pair<double, int>> by_step;
  for (int kv = 0; kv < header.kv_heads; ++kv) {
    view.head = kv * group;
    const StudioSnapshot shown = analyzer.snapshot(view);
    const auto& lines = shown.inspection.policies[h2o].score_lines;
    ASSERT_LE(lines.size(), 1u);
    if (lines.empty()) continue;
    EXPECT_EQ(lines[0].kv_head, kv);
    for (size_t i = 0; i < lines[0].series.x.size(); ++i) {
      by_step[lines[0].series.x[i]].first += lines[0].series.y[i];
      by_step[lines[0].series.x[i]].second += 1;
    }
  }
  ASSERT_EQ(by_step.size(), line.series.x.size());
  size_t i = 0;
  for (const auto& [step, sum_count] : by_step) {
    EXPECT_EQ(step, line.series.x[i]);
    EXPECT_NEAR(line.series.y[i], sum_count.first / sum_count.second, 1e-9 * std::abs(line.series.y[i]) + 1e-12);
    ++i;
  }
}
