// H2O Studio's Qt-free analytics: fates, aligned attention matrices, survival
// rasters, score-rank fits, sparsity, frame statistics, recordings, and the
// Analyzer's promise that a replayed recording gives the same snapshots.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <sstream>
#include <sys/stat.h>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/base/text_file.h"
#include "core/cpu/cpu_backend.h"
#include "core/studio/analytics.h"
#include "core/studio/step_payload.h"
#include "core/studio/analyzer.h"
#include "core/studio/capture_schedule.h"
#include "core/studio/checkpoint_stream.h"
#include "core/studio/recording.h"
#include "core/studio/report.h"
#include "core/studio/run_log.h"
#include "core/studio/step_line.h"
#include "core/studio/studio_run.h"
#include "core/studio/studio_setup.h"
#include "tests/assets.h"
#include "tests/studio/small_studio_config.h"
#include "ui/shell/frame_stats.h"

using namespace h2o;

namespace {

PolicyConfig h2o_policy(int sinks, int heavy, int recent) {
  return PolicyConfig::named("h2o").set("sinks", sinks).set("heavy", heavy).set("recent", recent);
}

PolicyConfig streaming_policy(int sinks, int window) {
  return PolicyConfig::named("streaming").set("sinks", sinks).set("window", window);
}

// Two KV heads (one query head each) holding different keys, one row each.
AttentionCapture two_head_capture() {
  AttentionCapture a;
  a.layer = 1;
  a.rows = 1;
  a.query_positions = {9};
  a.key_positions = {{0, 3, 9}, {0, 5, 9}};
  a.probs = {{0.5f, 0.25f, 0.25f}, {0.1f, 0.6f, 0.3f}};
  return a;
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

TEST(StudioSetup, SplitsOneBudgetIntoThreePolicies) {
  StudioConfig c;
  c.budget = 64;
  c.params["sinks"] = 4;
  const auto p = studio_policies(c);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name(), "full");
  EXPECT_EQ(p[1].get("window"), 60);
  EXPECT_EQ(p[2].get("heavy") + p[2].get("recent"), 60);
  c.params["heavy"] = 10;
  EXPECT_EQ(studio_policies(c)[2].get("recent"), 50);
  c.params["heavy"] = 70;
  EXPECT_THROW(studio_policies(c), Error);
  c.params["heavy"] = 0;
  c.params["sinks"] = 64;
  EXPECT_THROW(studio_policies(c), Error);
  // Any 1 to 4 kinds, in the order chosen.
  c.params["sinks"] = 4;
  c.policies = {"tova", "h2o"};
  const auto two = studio_policies(c);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].describe(), "tova(sinks=4,window=60)");
  c.policies = {"full", "streaming", "h2o", "tova", "full"};
  EXPECT_THROW(studio_policies(c), Error);
  c.policies = {"lru"};
  EXPECT_THROW(studio_policies(c), Error);
}

// Slack "auto" (-1, the default) is the backend's: exact on the CPU, kDeviceSlack on a GPU; a number
// given is kept on either.
TEST(StudioSetup, AutoSlackIsTheBackendsDefault) {
  EXPECT_EQ(default_slack("cpu"), 0);
  EXPECT_EQ(default_slack("cuda"), kDeviceSlack);
  EXPECT_EQ(default_slack("cuda-sim"), kDeviceSlack);
  // A device reads the weights once a step for every pane; the CPU times each pane alone.
  EXPECT_FALSE(batched_by_default("cpu"));
  EXPECT_TRUE(batched_by_default("cuda"));
  EXPECT_TRUE(batched_by_default("cuda-sim"));
  StudioConfig c;
  EXPECT_EQ(c.slack, -1);
  c.policies = {"full", "h2o"};
  EXPECT_EQ(studio_policies(c)[1].slack, 0);
  c.backend = "cuda";
  EXPECT_EQ(studio_policies(c)[1].slack, kDeviceSlack);
  EXPECT_NE(studio_policies(c)[1].describe().find("slack=" + std::to_string(kDeviceSlack)), std::string::npos);
  c.slack = 0;
  EXPECT_EQ(studio_policies(c)[0].slack, 0);
  EXPECT_TRUE(studio_engine_options(c).batched);
  c.backend = "cpu";
  EXPECT_FALSE(studio_engine_options(c).batched);
}

TEST(Recording, StepRoundTripsExactlyIncludingPartialUtf8) {
  StepRecord r;
  r.step = 7;
  r.phase = Phase::Decode;
  r.prompt_index = 2;
  r.turn_end = true;
  r.engine_seconds = 0.1 + 0.2;
  SessionRecord s;
  s.session = 1;
  s.fed = {5, 6};
  s.fed_text = {"a\n", std::string("\xe2\x82", 2)};  // half a euro sign
  s.token = 9;
  s.text = "\xff";
  s.cached_tokens = 3;
  s.quantized_tokens = 2;
  s.live_bytes = 1 << 20;
  s.step_ms = 1.0 / 3;
  s.decode_tokens_per_s = 123.456789;
  s.position = 40;
  s.evictions.everywhere = {2};
  s.evictions.by_head = {{1, 0, 4}};
  s.nll = {0.7};
  s.kl = {0.01};
  s.agree = {1};
  s.attention = {two_head_capture()};
  s.attention[0].top_share = {0.5f, 0.6f};
  s.layer_states = {LayerState{1, {{0, 3}}, {{1.5f, 0.1f}}}};
  r.sessions.push_back(s);
  SessionRecord stopped;
  stopped.session = 0;
  stopped.stopped = "out of KV memory: 1.0 MiB held, 0.5 MiB more needed, limit 1.0 MiB";
  r.sessions.push_back(stopped);
  const std::string line = recording_step_line(r);
  std::string text = line;
  const StepRecord back = parse_step_line(text);
  std::string cut = line.substr(0, line.size() / 2);
  EXPECT_THROW(parse_step_line(cut), Error);
  std::string two = line + " " + line, blanks = line + "  \t";  // a second object is not this line's
  EXPECT_THROW(parse_step_line(two), Error);
  EXPECT_NO_THROW(parse_step_line(blanks));
  EXPECT_EQ(recording_step_line(back), line);
  EXPECT_EQ(back.sessions[0].fed_text[1], s.fed_text[1]);
  EXPECT_EQ(back.sessions[0].text, "\xff");
  EXPECT_EQ(back.engine_seconds, r.engine_seconds);
  EXPECT_EQ(back.sessions[0].step_ms, s.step_ms);
  EXPECT_EQ(back.sessions[0].quantized_tokens, 2);
  EXPECT_EQ(back.sessions[1].quantized_tokens, 0);  // not written where there are none
  EXPECT_EQ(line.find("quantized_tokens", line.find("out of KV memory")), std::string::npos);
  // Probabilities come back as the recording keeps them (8-bit codes), the rest exactly.
  StepRecord rounded = r;
  round_to_recorded(rounded);
  EXPECT_EQ(back.sessions[0].attention[0].probs, rounded.sessions[0].attention[0].probs);
  EXPECT_NE(back.sessions[0].attention[0].probs, s.attention[0].probs);  // the capture has values between codes
  EXPECT_EQ(back.sessions[0].attention[0].key_positions, s.attention[0].key_positions);
  EXPECT_EQ(back.sessions[0].attention[0].query_positions, s.attention[0].query_positions);
  EXPECT_EQ(back.sessions[0].evictions, s.evictions);
  EXPECT_EQ(back.sessions[0].layer_states[0].positions, s.layer_states[0].positions);
  EXPECT_EQ(back.sessions[0].layer_states[0].scores, s.layer_states[0].scores);
  EXPECT_EQ(back.sessions[0].attention[0].top_share, s.attention[0].top_share);
  EXPECT_EQ(back.sessions[0].layer_states[0].scores, s.layer_states[0].scores);
  EXPECT_EQ(back.sessions[0].evictions, s.evictions);
  EXPECT_EQ(back.sessions[0].position, 40);
  EXPECT_TRUE(back.sessions[0].stopped.empty());
  EXPECT_EQ(back.sessions[1].stopped, stopped.stopped);
}

TEST(Recording, AHeaderOfImpossibleNumbersIsOneError) {
  const auto dir = test::temp_dir("recording-header");
  const std::string path = (dir / "bad.jsonl").string();
  const auto header_with = [&](const std::string& layers, const std::string& policy_extra) {
    write_file_atomic(path, R"({"format":"h2o-studio-recording","version":2,"header":{"mode":"stream","layers":)" + layers +
                                R"(,"heads":2,"kv_heads":1,"policies":[{"policy":"h2o")" + policy_extra + "}]}}\n");
  };
  const auto error_of = [&] {
    try {
      RecordingReader reader(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  header_with("1e110", "");
  EXPECT_NE(error_of().find("\"layers\": expected a whole number"), std::string::npos) << error_of();
  header_with("2", R"(,"heavy":3.5e300)");
  EXPECT_NE(error_of().find("\"heavy\": expected a whole number"), std::string::npos) << error_of();
  header_with("100000", "");
  EXPECT_NE(error_of().find("no model has 100000 layers"), std::string::npos) << error_of();
  header_with("2", "");
  EXPECT_EQ(error_of(), "no error");
  // Settings of the wrong size keep their defaults.
  const StudioConfig c = studio_config_from_json(nlohmann::json::parse(R"({"budget": 1e110, "temperature": 1e300, "seed": -1})"));
  EXPECT_EQ(c.budget, StudioConfig{}.budget);
  EXPECT_EQ(c.temperature, StudioConfig{}.temperature);
  EXPECT_EQ(c.seed, StudioConfig{}.seed);
}

TEST(Recording, AStepThatDoesNotFitItsHeaderIsOneErrorNamingItsLine) {
  const auto dir = test::temp_dir("recording-fit");
  const std::string path = (dir / "unfit.jsonl").string();
  RecordingHeader h;
  h.layers = 2;
  h.heads = 2;
  h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  const auto first_error = [&](const std::function<void(SessionRecord&)>& spoil) {
    {
      RecordingWriter writer(path, h);
      StepRecord r;
      r.sessions.resize(1);
      AttentionCapture a;
      a.layer = 1;
      a.rows = 1;
      a.query_positions = {0};
      a.key_positions = {{0}};
      a.probs = {{1.0f}, {1.0f}};
      r.sessions[0].attention = {a};
      r.sessions[0].layer_states = {LayerState{0, {{0}}, {{0.5f}}}};
      writer.write(r);  // a good step first
      r.step = 1;
      spoil(r.sessions[0]);
      writer.write(r);
    }
    RecordingReader reader(path);
    try {
      while (reader.next()) {
      }
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto says = [](const std::string& error, const std::string& what) {
    return error.find("unfit.jsonl:3: session 0: ") != std::string::npos && error.find(what) != std::string::npos;
  };
  std::string e = first_error([](SessionRecord& s) { s.attention[0].key_positions = {{0}, {1}}; });
  EXPECT_TRUE(says(e, "key positions do not list every KV head")) << e;
  e = first_error([](SessionRecord& s) { s.attention[0].probs[1] = {0.5f, 0.5f}; });
  EXPECT_TRUE(says(e, "probabilities are not rows x keys")) << e;
  e = first_error([](SessionRecord& s) { s.attention[0].key_positions = {{-100}}; });
  EXPECT_TRUE(says(e, "a negative key position")) << e;
  e = first_error([](SessionRecord& s) { s.attention[0].layer = 7; });
  EXPECT_TRUE(says(e, "no such layer")) << e;
  e = first_error([](SessionRecord& s) { s.layer_states[0].scores = {}; });
  EXPECT_TRUE(says(e, "positions and scores do not list every KV head")) << e;
  e = first_error([](SessionRecord& s) { s.session = 3; });
  EXPECT_NE(e.find("session 3: no such policy in the header"), std::string::npos) << e;
  e = first_error([](SessionRecord& s) { s.evictions.by_head = {{0, 5, 2}}; });
  EXPECT_TRUE(says(e, "an eviction outside the model")) << e;
  // Reliability round 4: these replayed with exit 0.
  e = first_error([](SessionRecord& s) { s.position = -100; });
  EXPECT_TRUE(says(e, "position -100 out of range")) << e;
  e = first_error([](SessionRecord& s) { s.decode_tokens_per_s = -5; });
  EXPECT_TRUE(says(e, "a negative time or rate")) << e;
  e = first_error([](SessionRecord& s) { s.step_ms = -1; });
  EXPECT_TRUE(says(e, "a negative time or rate")) << e;
  e = first_error([](SessionRecord& s) { s.quantized_tokens = s.cached_tokens + 1; });
  EXPECT_TRUE(says(e, "outside 0 to cached_tokens")) << e;
  // Read whole, a capture's arrays may not be missing.
  e = first_error([](SessionRecord& s) {
    s.attention[0].rows = 1000;
    s.attention[0].query_positions.clear();
    s.attention[0].key_positions.clear();
    s.attention[0].probs.clear();
  });
  EXPECT_TRUE(says(e, "query positions do not match its rows")) << e;
  EXPECT_EQ(first_error([](SessionRecord&) {}), "no error");
  // Steps the analyzer cannot number.
  {
    RecordingWriter writer(path, h);
    StepRecord r;
    r.step = -5;
    writer.write(r);
  }
  try {
    RecordingReader reader(path);
    reader.next();
    FAIL() << "a negative step was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unfit.jsonl:2: step -5 out of range"), std::string::npos) << e.what();
  }
}

// Reliability round 4: `--replay` of a FIFO blocked for good (opening it waited
// for a writer); a folder said "empty file". Both are one line naming the path.
TEST(Recording, APipeOrAFolderIsRefusedBeforeItIsOpened) {
  const auto dir = test::temp_dir("recording-pipe");
  const std::string fifo = (dir / "f.jsonl").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    RecordingReader reader(fifo);
    ADD_FAILURE() << "a pipe was opened as a recording";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fifo + ": not a regular file (a pipe"), std::string::npos) << e.what();
  }
  try {
    StudioRun::replay(dir.string());
    ADD_FAILURE() << "a folder was opened as a recording";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.string() + ": a folder, not a recording"), std::string::npos) << e.what();
  }
}

// A text file, a JSON file of another kind, or a JSON array as a recording: one line naming the file
// and what it is not, never the parser's "[json.exception.parse_error.101] … last read: '1 P'".
TEST(Recording, AFileOfAnotherKindIsNamedNotAParsersMessage) {
  const auto dir = test::temp_dir("recording-other-kind");
  for (const char* content : {"1 Peter 1:1 Paul, an apostle\n", "{\"model\": \"x\"}\n", "[1, 2]\n"}) {
    const std::string path = (dir / "other.h2orec.jsonl").string();
    std::ofstream(path) << content;
    try {
      RecordingReader reader(path);
      ADD_FAILURE() << "read as a recording: " << content;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), path + ": not an H2O Studio recording (its first line is not a recording's header)");
    }
  }
}

// Version 4: a step's payloads follow its line as bytes. A file cut inside
// them, or a line whose "tail" is not a byte count, is one error naming its
// line after every step before it; the steps before still count and read.
TEST(Recording, AStepsPayloadsCutShortAreNamedWithTheirLine) {
  const auto dir = test::temp_dir("recording-tail");
  const std::string path = (dir / "tail.jsonl").string();
  RecordingHeader h;
  h.layers = h.heads = h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  {
    RecordingWriter writer(path, h);
    for (int64_t step = 0; step < 4; ++step) {
      StepRecord r;
      r.step = step;
      r.sessions.resize(1);
      r.sessions[0].evictions.by_head = {{0, 0, int32_t(step)}, {0, 0, int32_t(step + 10)}};
      writer.write(r);
    }
  }
  const std::string whole = read_text_file(path);
  ASSERT_EQ(whole.rfind(std::string(kTailField), whole.find('\n') + 1), whole.find('\n') + 1);  // step 0 has a tail
  EXPECT_EQ(count_recorded_steps(path), 4);
  const auto error_reading = [&](const std::string& text, int steps_before) {
    write_file_atomic(path, text);
    RecordingReader reader(path);
    for (int i = 0; i < steps_before; ++i) {
      auto r = reader.next();
      if (!r) return std::string("ended early");
      if (r->sessions[0].evictions.by_head.size() != 2) return std::string("a payload lost");
    }
    try {
      reader.next();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Cut inside step 2's payloads (line 4): steps 0 and 1 read, then one error.
  const size_t step2 = whole.find("{\"tail\"", whole.find("\"step\":1"));
  std::string e = error_reading(whole.substr(0, whole.find('\n', step2) + 3), 2);
  EXPECT_NE(e.find("tail.jsonl:4: the file ends inside a step's payloads"), std::string::npos) << e;
  EXPECT_EQ(count_recorded_steps(path), 2);
  // A count that is no count, or claims a gigabyte the file has not got.
  for (const char* count : {"x", "0", "-4", "99999999999"}) {
    std::string bad = whole;
    const size_t at = step2 + kTailField.size();
    bad.replace(at, bad.find(',', at) - at, count);
    e = error_reading(bad, 2);
    EXPECT_TRUE(e.find("tail.jsonl:4: the step's \"tail\" is not a byte count") != std::string::npos ||
                e.find("tail.jsonl:4: the file ends inside") != std::string::npos)
        << count << ": " << e;
  }
  // Read back at random through the index, the steps are whole.
  write_file_atomic(path, whole);
  RecordingReader reader(path);
  while (reader.next()) {
  }
  RecordingLines lines(path, reader.header(), reader.version());
  EXPECT_EQ(lines.read(reader.index(), 2).sessions[0].evictions.by_head[1].position, 12);
}

TEST(Recording, AStepOutOfOrderIsNamedWithItsFileAndLine) {
  const auto dir = test::temp_dir("recording-order");
  RecordingHeader h;
  h.layers = h.heads = h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  // Swapped, repeated, missing: each stops the reading at its line, after the steps before it.
  for (const std::vector<int64_t>& steps : {std::vector<int64_t>{0, 1, 3, 2}, {0, 1, 1, 2}, {0, 1, 3}}) {
    const std::string path = (dir / "steps.jsonl").string();
    {
      RecordingWriter writer(path, h);
      for (int64_t step : steps) {
        StepRecord r;
        r.step = step;
        r.sessions.resize(1);
        writer.write(r);
      }
    }
    RecordingReader reader(path);
    ASSERT_TRUE(reader.next());
    ASSERT_TRUE(reader.next());
    try {
      reader.next();
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ":4: step " + std::to_string(steps[2]) + " does not follow step 1", 0), 0u)
          << e.what();
    }
  }
}

TEST(Recording, ReaderNamesTheBadLine) {
  const auto dir = test::temp_dir("recording");
  const std::string path = (dir / "bad.jsonl").string();
  RecordingHeader h;
  h.layers = h.heads = h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  write_file_atomic(path, recording_first_line(h) + "\n{\"step\": 1}\n");
  RecordingReader reader(path);
  EXPECT_EQ(reader.header().layers, 1);
  try {
    reader.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
  write_file_atomic(path, "{\"format\":\"something else\"}\n");
  EXPECT_THROW(RecordingReader{path}, Error);
  // Lines are parsed a batch ahead, on every core: still every good step first, in order, then the
  // bad line by its number.
  const std::string many = (dir / "many.jsonl").string();
  {
    RecordingWriter writer(many, h);
    for (int64_t step = 0; step < 40; ++step) {
      StepRecord r;
      r.step = step;
      r.sessions.resize(1);
      writer.write(r);
    }
  }
  {
    std::ofstream append(many, std::ios::app);
    append << "{\"step\": 40}\n";
  }
  RecordingReader batched(many);
  for (int64_t step = 0; step < 40; ++step) {
    const auto r = batched.next();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->step, step);
  }
  EXPECT_EQ(batched.index().offsets.size(), 40u);
  try {
    batched.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("many.jsonl:42"), std::string::npos) << e.what();
  }
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

TEST(Report, SummaryNamesPoliciesPlotsAndLogs) {
  ReportContents r;
  r.manifest = {{"model", {{"path", "m.bin"}, {"format", "llama2c"}, {"n_layers", 4}}}, {"started", "2026-11-23T16:00:00Z"}};
  r.written = "2026-11-23T16:05:00Z";
  r.totals = nlohmann::json::array({{{"policy", "h2o(sinks=4,heavy=30,recent=30)"}, {"generated_tokens", 5}}});
  r.steps = 12;
  r.plots = {"kv-memory.png", "kv-memory.svg"};
  r.logs = {"steps.csv"};
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("h2o(sinks=4,heavy=30,recent=30)"), std::string::npos);
  EXPECT_NE(md.find("![kv-memory.png](kv-memory.png)"), std::string::npos);
  EXPECT_NE(md.find("[kv-memory.svg](kv-memory.svg)"), std::string::npos);
  EXPECT_NE(md.find("[steps.csv](steps.csv)"), std::string::npos);
  EXPECT_NE(md.find("**Steps**: 12"), std::string::npos);
  // The run's start as the manifest has it, and the report's own instant.
  EXPECT_NE(md.find("**Run started**: 2026-11-23T16:00:00Z"), std::string::npos);
  EXPECT_NE(md.find("**Report written**: 2026-11-23T16:05:00Z"), std::string::npos);
}

// Each pane's stream has its own answers: a click names the token of the pane clicked, and says what the others hold there.
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
