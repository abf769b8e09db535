// H2O Studio's Qt-free analytics (core/analysis): fates, aligned attention matrices, survival
// rasters, score-rank fits, sparsity, frame statistics, and the Analyzer's
// promise that a replayed recording gives the same snapshots.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <sstream>
#include <sys/stat.h>

#include "core/analysis/analytics.h"
#include "core/analysis/analyzer.h"
#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/base/text_file.h"
#include "core/cpu/cpu_backend.h"
#include "core/recording/capture_schedule.h"
#include "core/recording/checkpoint_stream.h"
#include "core/recording/recording.h"
#include "core/recording/step_line.h"
#include "core/recording/step_payload.h"
#include "core/studio/report.h"
#include "core/studio/run_log.h"
#include "core/studio/studio_run.h"
#include "core/studio/studio_setup.h"
#include "tests/analysis/two_head_capture.h"
#include "tests/assets.h"
#include "tests/studio/small_studio_config.h"
#include "ui/shell/frame_stats.h"

using namespace h2o;
using h2o::test::two_head_capture;

namespace {

PolicyConfig h2o_policy(int sinks, int heavy, int recent) {
  return PolicyConfig::named("h2o").set("sinks", sinks).set("heavy", heavy).set("recent", recent);
}

PolicyConfig streaming_policy(int sinks, int window) {
  return PolicyConfig::named("streaming").set("sinks", sinks).set("window", window);
}

}  // namespace

TEST(Fates, FollowThePolicyRoles) {
  const PolicyConfig h = h2o_policy(2, 3, 4);
  EXPECT_EQ(fate_of(h, 0, true, 20), Fate::Sink);
  EXPECT_EQ(fate_of(h, 1, true, 20), Fate::Sink);
  EXPECT_EQ(fate_of(h, 10, true, 20), Fate::Heavy);
  EXPECT_EQ(fate_of(h, 15, true, 20), Fate::Heavy);  // 16..19 are the last 4
  EXPECT_EQ(fate_of(h, 16, true, 20), Fate::Recent);
  EXPECT_EQ(fate_of(h, 7, false, 20), Fate::Evicted);
  EXPECT_EQ(fate_of(h, 20, false, 20), Fate::Unborn);

  const PolicyConfig s = streaming_policy(4, 8);
  EXPECT_EQ(fate_of(s, 3, true, 30), Fate::Sink);
  EXPECT_EQ(fate_of(s, 22, true, 30), Fate::Recent);
  EXPECT_EQ(fate_of(s, 21, true, 30), Fate::Cached);  // only under slack

  PolicyConfig full;
  EXPECT_EQ(fate_of(full, 0, true, 30), Fate::Cached);  // the full cache has no roles
  EXPECT_EQ(fate_of(full, 29, true, 30), Fate::Cached);
}

TEST(Fates, TokenFatesMarkWhatIsNotCached) {
  const PolicyConfig h = h2o_policy(1, 1, 2);
  const std::vector<int32_t> cached = {0, 3, 5, 6};
  const auto fates = token_fates(h, cached, 7);
  const std::vector<Fate> want = {Fate::Sink, Fate::Evicted, Fate::Evicted, Fate::Heavy,
                                  Fate::Evicted, Fate::Recent, Fate::Recent};
  EXPECT_EQ(fates, want);
}

TEST(Attention, OneHeadUsesItsOwnKeys) {
  const AttentionCapture a = two_head_capture();
  const auto cols = attention_columns(a, 1, 1, 100, 4);
  EXPECT_EQ(cols, (std::vector<int32_t>{0, 5, 9}));
  std::vector<double> out;
  append_attention_rows(a, 1, 1, cols, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOAT_EQ(out[0], 0.1f);
  EXPECT_FLOAT_EQ(out[1], 0.6f);
  EXPECT_FLOAT_EQ(out[2], 0.3f);
}

TEST(Attention, MeanOverHeadsAlignsByStreamPosition) {
  const AttentionCapture a = two_head_capture();
  const auto cols = attention_columns(a, -1, 1, 100, 4);
  ASSERT_EQ(cols, (std::vector<int32_t>{0, 3, 5, 9}));
  std::vector<double> out;
  append_attention_rows(a, -1, 1, cols, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_NEAR(out[0], (0.5 + 0.1) / 2, 1e-7);  // both heads hold position 0
  EXPECT_NEAR(out[1], 0.25 / 2, 1e-7);         // head 1 evicted 3: it contributes 0
  EXPECT_NEAR(out[2], 0.6 / 2, 1e-7);
  EXPECT_NEAR(out[3], (0.25 + 0.3) / 2, 1e-7);
  double total = 0;
  for (double v : out) total += v;
  EXPECT_NEAR(total, 1.0, 1e-6);  // the mean of distributions is a distribution
}

TEST(Attention, MissingKeyOfOneHeadIsNaN) {
  const AttentionCapture a = two_head_capture();
  const std::vector<int32_t> cols = {0, 3, 5, 9};
  std::vector<double> out;
  append_attention_rows(a, 0, 1, cols, out);
  EXPECT_TRUE(std::isnan(out[2]));  // head 0 does not hold position 5
  EXPECT_FLOAT_EQ(out[1], 0.25f);
}

TEST(Attention, ColumnsKeepFirstAndLatest) {
  AttentionCapture a;
  a.rows = 1;
  a.key_positions = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}};
  a.probs = {std::vector<float>(10, 0.1f)};
  EXPECT_EQ(attention_columns(a, 0, 1, 5, 2), (std::vector<int32_t>{0, 1, 7, 8, 9}));
}

TEST(Attention, TrimKeepsTheFirstAndTheLatestSlots) {
  EXPECT_EQ(kept_key_slots(5, 3, 1), (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(kept_key_slots(5, 0, 1), (std::vector<int>{0, 1, 2, 3, 4}));  // 0: every key
  EXPECT_EQ(kept_key_slots(5, 5, 2), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(kept_key_slots(6, 3, 9), (std::vector<int>{0, 1, 2}));        // keep_first beyond the cap
}

namespace {

// `kv_heads` KV heads, each holding a random ascending subset of positions
// 0..59 (different keys, as after evictions by head), `group` query heads each.
AttentionCapture random_capture(std::mt19937& rng, int kv_heads, int group, int rows) {
  AttentionCapture a;
  a.rows = rows;
  for (int r = 0; r < rows; ++r) a.query_positions.push_back(60 + r);
  std::uniform_real_distribution<float> weight(0.0f, 1.0f);
  for (int kv = 0; kv < kv_heads; ++kv) {
    std::vector<int32_t> keys;
    for (int32_t p = 0; p < 60; ++p)
      if (p < 2 || weight(rng) < 0.4f) keys.push_back(p);
    a.key_positions.push_back(keys);
    for (int g = 0; g < group; ++g) {
      std::vector<float> probs(size_t(rows) * keys.size());
      for (float& p : probs) p = weight(rng);
      a.probs.push_back(probs);
    }
  }
  return a;
}

// attention_columns as plainly as it can be said: every key listed, sorted, trimmed.
std::vector<int32_t> plain_columns(const AttentionCapture& a, int head, int group, int max_columns, int keep_first) {
  std::vector<int32_t> keys;
  for (size_t kv = 0; kv < a.key_positions.size(); ++kv) {
    if (head >= 0 && int(kv) != head / group) continue;
    keys.insert(keys.end(), a.key_positions[kv].begin(), a.key_positions[kv].end());
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  if (max_columns <= 0 || int(keys.size()) <= max_columns) return keys;
  keep_first = std::clamp(keep_first, 0, max_columns);
  std::vector<int32_t> out(keys.begin(), keys.begin() + keep_first);
  out.insert(out.end(), keys.end() - (max_columns - keep_first), keys.end());
  return out;
}

// append_attention_rows as plainly: each key searched among the columns, the
// heads added in order, one cell at a time.
std::vector<double> plain_rows(const AttentionCapture& a, int head, int group, const std::vector<int32_t>& columns) {
  std::vector<double> out(size_t(a.rows) * columns.size(), NAN);
  const int heads = int(a.probs.size());
  for (int h = 0; h < heads; ++h) {
    if (head >= 0 && h != head) continue;
    const auto& keys = a.key_positions[size_t(h / group)];
    for (size_t k = 0; k < keys.size(); ++k) {
      const auto it = std::lower_bound(columns.begin(), columns.end(), keys[k]);
      if (it == columns.end() || *it != keys[k]) continue;
      for (int r = 0; r < a.rows; ++r) {
        double& cell = out[size_t(r) * columns.size() + size_t(it - columns.begin())];
        const double p = a.probs[size_t(h)][size_t(r) * keys.size() + k];
        cell = (std::isnan(cell) ? 0.0 : cell) + (head < 0 ? p / heads : p);
      }
    }
  }
  return out;
}

// Bit for bit: the same doubles, the same NaNs.
void expect_same_bits(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint64_t>(got[i]), std::bit_cast<uint64_t>(want[i])) << what << ", cell " << i;
}

// Every head (and the mean) of `a`, on its own columns (trimmed or not) and on columns no key list matches.
void expect_rows_and_columns_as_plainly_computed(const AttentionCapture& a, int group, const std::string& what) {
  std::vector<int32_t> every_third;
  for (int32_t p = 1; p < 64; p += 3) every_third.push_back(p);
  const int heads = int(a.probs.size());
  for (int head = -1; head < heads; ++head) {
    for (const auto& [max_columns, keep_first] : {std::pair{0, 0}, {7, 2}, {20, 4}, {100, 4}}) {
      const std::string at = what + ", head " + std::to_string(head) + ", max " + std::to_string(max_columns);
      const std::vector<int32_t> columns = attention_columns(a, head, group, max_columns, keep_first);
      ASSERT_EQ(columns, plain_columns(a, head, group, max_columns, keep_first)) << at;
      std::vector<double> rows = {1.5};  // appended after what is there
      append_attention_rows(a, head, group, columns, rows);
      std::vector<double> want = plain_rows(a, head, group, columns);
      want.insert(want.begin(), 1.5);
      expect_same_bits(rows, want, at);
    }
    std::vector<double> rows;
    append_attention_rows(a, head, group, every_third, rows);
    expect_same_bits(rows, plain_rows(a, head, group, every_third), what + ", every third position");
  }
}

}  // namespace

TEST(Attention, RowsOfKvHeadsHoldingDifferentKeysAreThePlainSums) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    // Three KV heads of two query heads each: a mean over six heads, whose sums round.
    const AttentionCapture a = random_capture(rng, 3, 2, 1 + trial % 3);
    expect_rows_and_columns_as_plainly_computed(a, 2, "trial " + std::to_string(trial));
  }
}

TEST(Attention, KeysOutOfOrderOrRepeatedGiveThePlainRowsToo) {
  std::mt19937 rng(11);
  AttentionCapture a = random_capture(rng, 3, 2, 2);
  // KV head 1's keys reversed (with its heads' columns of probabilities), KV head 2 holding one key twice.
  auto& reversed = a.key_positions[1];
  std::reverse(reversed.begin(), reversed.end());
  for (int h : {2, 3})
    for (int r = 0; r < a.rows; ++r) {
      const auto row = a.probs[size_t(h)].begin() + long(r * reversed.size());
      std::reverse(row, row + long(reversed.size()));
    }
  auto& repeated = a.key_positions[2];
  repeated.insert(repeated.begin() + 3, repeated[3]);
  for (int h : {4, 5}) {
    std::vector<float> probs;
    for (int r = 0; r < a.rows; ++r) {
      const auto row = a.probs[size_t(h)].begin() + long(r * (repeated.size() - 1));
      probs.insert(probs.end(), row, row + 4);
      probs.push_back(0.125f);
      probs.insert(probs.end(), row + 4, row + long(repeated.size() - 1));
    }
    a.probs[size_t(h)] = probs;
  }
  expect_rows_and_columns_as_plainly_computed(a, 2, "keys out of order");
}

TEST(ScoreRankCurve, SortsAsStdSortDoesBitForBit) {
  std::mt19937 rng(3);
  std::lognormal_distribution<float> score(0.0f, 3.0f);
  std::vector<float> many(5000);
  for (float& s : many) s = std::round(score(rng) * 64) / 64;  // ties too
  const std::vector<std::vector<float>> cases = {
      many, {}, {2.0f}, {0.0f, 3.0f, 0.0f, 1.0f}, {-0.0f, 0.0f, 1.0f, -0.0f},  // equal zeros of both signs
      {NAN, 2.0f, 1.0f, NAN, 5.0f}, {INFINITY, -1.0f, 0.5f, -INFINITY, 1e-40f, -2.5f}};
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<double> want(cases[c].begin(), cases[c].end());
    std::sort(want.begin(), want.end(), std::greater<double>());
    expect_same_bits(score_rank(cases[c], 0).score, want, "case " + std::to_string(c));
  }
}

TEST(Sparsity, TopKShareIsTheMassOnTheLargestKeys) {
  const auto share = [](std::vector<float> row, int k) {
    double sum = 0;
    int rows = 0;
    add_top_k_share(row, k, sum, rows);
    return rows ? sum / rows : NAN;
  };
  EXPECT_NEAR(share({0.5f, 0.25f, 0.25f}, 1), 0.5, 1e-6);
  EXPECT_NEAR(share({0.1f, 0.6f, 0.3f}, 1), 0.6, 1e-6);
  EXPECT_NEAR(share({0.5f, 0.25f, 0.25f}, 10), 1.0, 1e-6);
  EXPECT_TRUE(std::isnan(share({0.0f, 0.0f}, 1))) << "a row with no mass has no share";
}

TEST(PowerLaw, RecoversAnExactExponent) {
  std::vector<double> ranks, values;
  for (int r = 1; r <= 50; ++r) {
    ranks.push_back(r);
    values.push_back(7.0 * std::pow(r, -1.3));
  }
  const PowerLawFit fit = fit_power_law(ranks, values);
  EXPECT_NEAR(fit.slope, -1.3, 1e-9);
  EXPECT_NEAR(fit.intercept, std::log(7.0), 1e-9);
  EXPECT_EQ(fit.points, 50);
}

TEST(PowerLaw, IgnoresNonPositiveScoresAndNeedsTwoPoints) {
  EXPECT_TRUE(std::isnan(fit_power_law(std::vector<double>{1}, std::vector<double>{3}).slope));
  const PowerLawFit fit = fit_power_law(std::vector<double>{1, 2, 3}, std::vector<double>{4, 1, 0});
  EXPECT_EQ(fit.points, 2);
  EXPECT_NEAR(fit.slope, -2.0, 1e-12);
}

TEST(ScoreRankCurve, SortsDescendingAndThins) {
  std::vector<float> scores;
  for (int i = 1; i <= 1000; ++i) scores.push_back(float(1000.0 / i));
  const ScoreRank few = score_rank(scores, 40);
  EXPECT_LE(few.rank.size(), 40u);
  EXPECT_GT(few.rank.size(), 20u);
  EXPECT_EQ(few.rank.front(), 1.0);
  EXPECT_EQ(few.rank.back(), 1000.0);
  EXPECT_TRUE(std::is_sorted(few.score.rbegin(), few.score.rend()));
  EXPECT_NEAR(few.fit.slope, -1.0, 1e-4);
  ASSERT_EQ(few.fit_rank.size(), 2u);
  EXPECT_NEAR(few.fit_score.front(), 1000.0, 0.5);
  const ScoreRank all = score_rank(std::vector<float>{1, 3, 2}, 0);
  EXPECT_EQ(all.score, (std::vector<double>{3, 2, 1}));
}

TEST(Survival, RasterShowsBirthsRolesAndEvictions) {
  // Positions 0..5 fed at steps 0,0,1,2,3,4; position 2 evicted at step 3.
  const PolicyConfig h = h2o_policy(1, 1, 2);
  const std::vector<int32_t> birth = {0, 0, 1, 2, 3, 4};
  const std::vector<int32_t> evict = {-1, -1, 3, -1, -1, -1};
  const SurvivalRaster r = survival_raster(h.rule(), birth, evict, 0, 6, 0, 4, 100, 100);
  EXPECT_EQ(r.first_step, 0);
  EXPECT_EQ(r.rows, 5);
  EXPECT_EQ(r.cols, 6);
  EXPECT_FALSE(r.binned());
  EXPECT_EQ(r.at(0, 0), Fate::Sink);
  EXPECT_EQ(r.at(0, 1), Fate::Recent);
  EXPECT_EQ(r.at(0, 2), Fate::Unborn);
  EXPECT_EQ(r.at(2, 2), Fate::Recent);   // step 2: stream 0..3, recent = 2,3
  EXPECT_EQ(r.at(3, 2), Fate::Evicted);  // evicted by step 3's cut
  EXPECT_EQ(r.at(4, 1), Fate::Heavy);    // step 4: held, neither sink nor recent
  const SurvivalRaster window = survival_raster(h.rule(), birth, evict, 3, 6, 3, 4, 100, 100);
  EXPECT_EQ(window.first_step, 3);
  EXPECT_EQ(window.first_position, 3);
  EXPECT_EQ(window.cells.size(), 6u);
  // Steps after the last shown one are not looked at: position 2 is still held at step 2.
  const SurvivalRaster before = survival_raster(h.rule(), birth, evict, 0, 4, 0, 2, 100, 100);
  EXPECT_EQ(before.at(2, 2), Fate::Recent);
}

TEST(FrameStatsTest, NearestRankPercentiles) {
  std::vector<double> ms;
  for (int i = 1; i <= 100; ++i) ms.push_back(i);
  const FrameStats s = frame_stats(ms);
  EXPECT_EQ(s.frames, 100u);
  EXPECT_EQ(s.median_ms, 50);
  EXPECT_EQ(s.p95_ms, 95);
  EXPECT_EQ(s.max_ms, 100);
  EXPECT_TRUE(std::isnan(frame_stats({}).median_ms));
}

namespace {

// What the app reads out of each step, at layer 1.
const StudioCaptureSchedule kWatchLayer1(1);

std::unique_ptr<Engine> synthetic_engine() {
  const StudioConfig c = test::small_studio_config();
  const StudioInputs in = load_studio_inputs(c);
  return make_studio_engine(c, in, make_cpu_backend(in.model, 1));
}

// The numbers a pane shows, and the pictures' data, as one comparable text.
std::string fingerprint(const StudioSnapshot& s) {
  std::ostringstream o;
  o.precision(17);
  o << s.step << ' ' << s.engine_seconds << ' ' << s.capture_layer << '\n';
  for (const auto& p : s.panes) {
    o << p.policy << ' ' << p.cached_tokens << ' ' << p.live_bytes << ' ' << p.tokens_per_s << ' '
      << p.stream_length << ' ' << p.generated << ' ' << p.sparsity << ' ' << p.score_rank.fit.slope << '\n';
    for (const auto& t : p.tokens) o << int(t.fate) << t.text;
    for (double v : p.heatmap.values) o << v << ',';
    for (uint8_t c : p.overview.cells) o << int(c);
    for (uint8_t c : p.detail.cells) o << int(c);
    o << '\n';
  }
  for (const auto& series : s.kv_bytes)
    for (double y : series.y) o << y << ',';
  for (const auto& series : s.throughput)
    for (double y : series.y) o << y << ',';
  for (const auto& pp : s.inspection.policies) {
    for (const auto& e : pp.evictions) o << e.layer << e.kv_head << e.step;
    for (const auto& line : pp.score_lines)
      for (double y : line.series.y) o << y << ',';
  }
  return o.str();
}

}  // namespace

TEST(Analyzer, ReplayGivesTheSameSnapshotsAsTheLiveRun) {
  auto engine = synthetic_engine();
  Analyzer live(make_header(*engine, nlohmann::json::object(), "stream"));
  std::string recording = recording_first_line(live.header()) + "\n";
  for (int i = 0; i < 60; ++i) {
    StepRecord record = engine->step(&kWatchLayer1);
    round_to_recorded(record);  // as StudioRun's loop does: the live view is what the recording keeps
    recording += recording_step_line(record) + "\n";
    live.ingest(record);
  }
  const auto dir = test::temp_dir("replay");
  const std::string path = (dir / "run.jsonl").string();
  write_file_atomic(path, recording);

  RecordingReader reader(path);
  Analyzer replay(reader.header());
  while (auto record = reader.next()) replay.ingest(*record);
  EXPECT_EQ(replay.steps_ingested(), 60);

  for (int head : {-1, 0, 3}) {
    ViewSelection view;
    view.layer = 1;
    view.head = head;
    view.inspect_position = 3;
    const StudioSnapshot a = live.snapshot(view), b = replay.snapshot(view);
    EXPECT_EQ(fingerprint(a), fingerprint(b)) << "head " << head;
    // And the snapshot holds real pictures.
    ASSERT_EQ(a.panes.size(), 3u);
    for (const auto& p : a.panes) {
      EXPECT_GT(p.tokens.size(), 0u);
      EXPECT_GT(p.heatmap.rows(), 0);
      EXPECT_GT(p.heatmap.cols(), 0);
      EXPECT_GT(p.overview.cells.size(), 0u);
      EXPECT_GT(p.detail.cells.size(), 0u);
      EXPECT_GT(p.score_rank.rank.size(), 0u);
    }
  }
}

// A checkpoint holds everything the analyzer shows but its newest captures:
// restored and fed the steps after it, an analyzer shows what one fed every
// step shows, at the newest step and at an earlier one, at every head.
TEST(Analyzer, ACheckpointRestoredAndFedTheRestShowsWhatTheWholeRunShows) {
  auto engine = synthetic_engine();
  const RecordingHeader header = make_header(*engine, nlohmann::json::object(), "stream");
  Analyzer whole(header), first_half(header), restored(header);
  std::vector<StepRecord> records;
  for (int i = 0; i < 80; ++i) {
    records.push_back(engine->step(&kWatchLayer1));
    round_to_recorded(records.back());
    whole.ingest(records.back());
    if (i < 40) first_half.ingest(records.back());
  }
  std::ostringstream frame;
  const int64_t bytes = first_half.save_checkpoint(frame);
  EXPECT_EQ(bytes, int64_t(frame.str().size()));
  restored.restore_checkpoint(frame.str(), kMaxCheckpointBytes);
  EXPECT_EQ(restored.latest_step(), 39);
  for (size_t i = 40; i < records.size(); ++i) restored.ingest(records[i]);
  EXPECT_EQ(restored.latest_step(), 79);
  EXPECT_EQ(restored.first_step(), 0);
  EXPECT_EQ(restored.steps_ingested(), 80);
  for (int64_t step : {int64_t(-1), int64_t(20)})
    for (int head : {-1, 0, 3}) {
      ViewSelection view;
      view.layer = 1;
      view.head = head;
      view.step = step;
      view.inspect_position = 3;
      EXPECT_EQ(fingerprint(restored.snapshot(view)), fingerprint(whole.snapshot(view))) << "step " << step << " head " << head;
    }
}

// A damaged checkpoint is one Error and leaves the analyzer as it was; so is
// one of another model's shape, or one restored into an analyzer that has steps.
TEST(Analyzer, ADamagedOrMismatchedCheckpointIsRefusedWhole) {
  auto engine = synthetic_engine();
  const RecordingHeader header = make_header(*engine, nlohmann::json::object(), "stream");
  Analyzer source(header);
  for (int i = 0; i < 30; ++i) {
    StepRecord record = engine->step(&kWatchLayer1);
    round_to_recorded(record);
    source.ingest(record);
  }
  std::ostringstream out;
  source.save_checkpoint(out);
  const std::string frame = out.str();
  const std::string raw = unpack_checkpoint(frame, kMaxCheckpointBytes);
  const auto refused = [&](const std::string& bytes, const RecordingHeader& h, const std::string& why) {
    Analyzer a(h);
    try {
      a.restore_checkpoint(bytes, kMaxCheckpointBytes);
      ADD_FAILURE() << why << ": restored";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("checkpoint: ", 0), 0u) << why << ": " << e.what();
    }
    EXPECT_EQ(a.steps_ingested(), 0) << why;
  };
  refused(frame.substr(0, frame.size() / 2), header, "cut in half");
  refused(frame + "x", header, "a byte after its frame");
  refused("not zstd", header, "not a frame");
  // Every byte of the unpacked state changed in turn (a sample): refused or restored, never a crash.
  for (size_t at = 0; at < raw.size(); at += std::max<size_t>(1, raw.size() / 400)) {
    std::string bad = raw;
    bad[at] = char(bad[at] ^ 0x5a);
    std::ostringstream packed;
    CheckpointWriter w(packed);
    std::memcpy(w.bytes().append(bad.size()), bad.data(), bad.size());
    w.finish();
    Analyzer a(header);
    try {
      a.restore_checkpoint(packed.str(), kMaxCheckpointBytes);
      (void)a.snapshot(ViewSelection{});
    } catch (const Error&) {
      EXPECT_EQ(a.steps_ingested(), 0);
    }
  }
  RecordingHeader other = header;
  other.layers += 1;
  refused(frame, other, "another shape");
  Analyzer busy(header);
  busy.restore_checkpoint(frame, kMaxCheckpointBytes);
  EXPECT_THROW(busy.restore_checkpoint(frame, kMaxCheckpointBytes), Error);
  EXPECT_THROW(unpack_checkpoint(frame, 16), Error);
}

TEST(Analyzer, SnapshotsAgreeWithTheEngineCaches) {
  auto engine = synthetic_engine();
  Analyzer analyzer(make_header(*engine, nlohmann::json::object(), "stream"));
  for (int i = 0; i < 50; ++i) analyzer.ingest(engine->step(&kWatchLayer1));
  ViewSelection view;
  view.layer = 1;
  view.head = 2;  // stories260K: 8 heads, 4 KV heads: KV head 1
  view.max_tokens = 1 << 20;
  const StudioSnapshot s = analyzer.snapshot(view);
  for (size_t i = 0; i < engine->sessions().size(); ++i) {
    const Session& session = *engine->sessions()[i];
    const auto& pane = s.panes[i];
    EXPECT_EQ(pane.stream_length, int64_t(session.stream().size()));
    EXPECT_EQ(pane.cached_tokens, session.cache().max_size());
    // The fates' "held" set is exactly the cache's positions of that head.
    const auto held = session.cache().read_layer(1).positions[1];
    const auto want = token_fates(session.policy(), held, int64_t(session.stream().size()));
    size_t fed = 0;
    for (const auto& t : pane.tokens) {
      if (t.position >= pane.stream_length) continue;  // the sampled, unfed token
      // A cell may be several byte tokens of one character: the last one's fate colours it.
      EXPECT_EQ(t.fate, want[size_t(t.position)]) << "policy " << i << " position " << t.position;
      fed += size_t(t.position - t.first_position + 1);
    }
    EXPECT_EQ(fed, session.stream().size());
  }
  // The streaming and H2O caches evicted something by now; the full cache did not.
  EXPECT_EQ(s.panes[0].cached_tokens, s.panes[0].stream_length);
  EXPECT_LT(s.panes[2].cached_tokens, s.panes[2].stream_length);
}

TEST(Analyzer, ScoreHistoriesAreBoundedToRecentSinksHeavyHittersAndTheClickedToken) {
  auto engine = synthetic_engine();
  constexpr int64_t kKept = 40;
  Analyzer analyzer(make_header(*engine, nlohmann::json::object(), "stream"), kKept);
  for (int i = 0; i < 160; ++i) analyzer.ingest(engine->step(&kWatchLayer1));
  ViewSelection view;
  view.layer = 1;
  // Only the inspector is looked at: keep the rest of each snapshot small.
  view.max_tokens = 1;
  view.overview_columns = view.overview_rows = view.detail_positions = view.detail_rows = 1;
  view.heatmap_rows = 1;
  const Session& streaming = *engine->sessions()[1];
  const int64_t length = int64_t(streaming.stream().size());
  ASSERT_GT(length, 3 * kKept);
  const auto history = [&](int64_t position, size_t policy) {
    view.inspect_position = position;
    const StudioSnapshot snapshot = analyzer.snapshot(view);  // alive for the loop, not a temporary
    size_t samples = 0;
    for (const auto& line : snapshot.inspection.policies[policy].score_lines) samples += line.series.x.size();
    return samples;
  };
  // StreamingLLM: position 10 left long ago (beyond the horizon), a sink is
  // still cached, a token that left within the horizon still has its history.
  const auto held = streaming.cache().read_layer(1).positions[0];
  ASSERT_EQ(std::count(held.begin(), held.end(), 10), 0);
  EXPECT_EQ(history(10, 1), 0u);
  EXPECT_GT(history(0, 1), 0u);
  const int64_t recent_evicted = held[2] - 1;  // just before the window: gone, but recently
  ASSERT_GT(recent_evicted, length - kKept);
  EXPECT_GT(history(recent_evicted, 1), 0u);
  // The full cache holds everything, but keeps old histories only for its top
  // scores (32 per KV head and read): bounded however long the stream.
  const int64_t full_length = int64_t(engine->sessions()[0]->stream().size());
  int64_t old_with_history = 0, forgotten = -1;
  for (int64_t p = 0; p < full_length - kKept; ++p) {
    if (history(p, 0) > 0) ++old_with_history;
    else forgotten = p;
  }
  EXPECT_LE(old_with_history, 32 * 4);
  ASSERT_GE(forgotten, 0) << "every old position kept its history";
  // A click pins a position: from then on its history is kept.
  analyzer.pin(forgotten);
  for (int i = 0; i < 10; ++i) analyzer.ingest(engine->step(&kWatchLayer1));
  EXPECT_GT(history(forgotten, 0), 0u);
  EXPECT_LT(analyzer.bounded_bytes(), 4 << 20);
}

TEST(Analyzer, InspectorFollowsTheTopHeavyHitterUntilAClick) {
  auto engine = synthetic_engine();
  Analyzer analyzer(make_header(*engine, nlohmann::json::object(), "stream"));
  for (int i = 0; i < 50; ++i) analyzer.ingest(engine->step(&kWatchLayer1));
  ViewSelection view;
  view.layer = 1;
  view.head = 2;  // KV head 1
  const StudioSnapshot s = analyzer.snapshot(view);
  ASSERT_TRUE(s.inspection.followed);
  const int64_t followed = s.inspection.position;
  ASSERT_GE(followed, 0);
  // It is one of H2O's heavy hitters, held at that head.
  const Session& h2o = *engine->sessions()[2];
  const auto positions = h2o.cache().read_layer(1).positions[1];
  EXPECT_EQ(fate_of(h2o.policy(), followed, true, int64_t(h2o.stream().size())), Fate::Heavy);
  EXPECT_NE(std::find(positions.begin(), positions.end(), int32_t(followed)), positions.end());
  EXPECT_EQ(s.panes[2].tokens[size_t(followed - s.panes[2].tokens.front().position)].fate, Fate::Heavy);
  // A click pins the inspector to that token instead.
  view.inspect_position = 1;
  const StudioSnapshot clicked = analyzer.snapshot(view);
  EXPECT_FALSE(clicked.inspection.followed);
  EXPECT_EQ(clicked.inspection.position, 1);
}

TEST(Labels, SpacedByImportanceTakesTheBrightestThatFit) {
  const std::vector<double> importance = {5, 1, 0.5, 9, 2, NAN, 3, 0.1};
  // Gap 1: every index, ascending.
  EXPECT_EQ(spaced_by_importance(importance, 1), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Gap 2: 3 first (9), then 0 (5), then 6 (3); 4 touches 3, 1 touches 0; 7 and 5 touch 6.
  EXPECT_EQ(spaced_by_importance(importance, 2), (std::vector<int>{0, 3, 6}));
  // Gap 3: 3, then 0 (3 apart), then 6 (3 apart from 3).
  EXPECT_EQ(spaced_by_importance(importance, 3), (std::vector<int>{0, 3, 6}));
  // Gap 4: 3, then 7 (4 apart)... 0 is 3 away from 3: skipped; 7 has 0.1 but fits.
  EXPECT_EQ(spaced_by_importance(importance, 4), (std::vector<int>{3, 7}));
  EXPECT_TRUE(spaced_by_importance({}, 3).empty());
}

TEST(Analyzer, InspectorNamesTheClickedPanesToken) {
  auto engine = synthetic_engine();
  Analyzer analyzer(make_header(*engine, nlohmann::json::object(), "stream"));
  for (int i = 0; i < 50; ++i) analyzer.ingest(engine->step(&kWatchLayer1));
  const StudioSnapshot s = analyzer.snapshot(ViewSelection{});
  const auto text_at = [&](size_t pane, int64_t position) {
    for (const auto& token : s.panes[pane].tokens)
      if (token.position == position) return token.text;
    return std::string();
  };
  int64_t differs = -1;  // a position where H2O's answer and the full cache's differ
  for (const auto& token : s.panes[2].tokens)  // the newest such token fed (the newest chosen is not yet)
    if (token.fate != Fate::Unborn && !text_at(0, token.position).empty() && text_at(0, token.position) != token.text)
      differs = token.position;
  ASSERT_GE(differs, 0) << "the synthetic sessions' answers differ somewhere";
  ViewSelection view;
  view.inspect_position = differs;
  view.inspect_pane = 2;
  const InspectionSnapshot in = analyzer.snapshot(view).inspection;
  EXPECT_EQ(in.pane, 2);
  EXPECT_EQ(in.text, text_at(2, differs));
  EXPECT_EQ(in.policies[2].text, text_at(2, differs));
  EXPECT_EQ(in.policies[0].text, text_at(0, differs));
  EXPECT_EQ(in.policies[2].reason, fate_reason(in.policies[2].config, in.policies[2].fate_now));
  view.inspect_pane = 0;
  EXPECT_EQ(analyzer.snapshot(view).inspection.text, text_at(0, differs));
}
