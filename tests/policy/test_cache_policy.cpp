// The policies against a brute-force reference on random attention patterns:
// per (layer, KV head), the kept sets and the evicted positions must match
// after every step, ties included.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/cpu/cpu_cache.h"
#include "core/policy/kept_set.h"
#include "core/policy/policy.h"
#include "core/base/error.h"

using namespace h2o;

namespace {

struct RefToken {
  int32_t pos;
  double score;
};

// SEMANTICS.md, written the slow and obvious way, policy by policy: sort everything.
std::vector<RefToken> reference_cut(const PolicyConfig& p, std::vector<RefToken> c) {
  const std::string kind(p.name());
  const int n = int(c.size());
  if (kind == "full" || n <= p.budget() + p.slack) return c;
  const int sinks = p.get("sinks");
  const int tail = kind == "streaming" ? p.get("window") : kind == "h2o" ? p.get("recent") : 0;
  const int by_score = kind == "h2o" ? p.get("heavy") : kind == "tova" ? p.get("window") : 0;
  std::set<int32_t> keep;
  std::vector<RefToken> by_pos = c;
  std::sort(by_pos.begin(), by_pos.end(), [](auto& a, auto& b) { return a.pos < b.pos; });
  for (int i = 0; i < n; ++i) {
    if (by_pos[i].pos < sinks) keep.insert(by_pos[i].pos);
    if (i >= n - tail) keep.insert(by_pos[i].pos);
  }
  std::vector<RefToken> rest;
  for (auto& t : by_pos)
    if (!keep.count(t.pos)) rest.push_back(t);
  std::sort(rest.begin(), rest.end(), [](auto& a, auto& b) {
    return a.score != b.score ? a.score > b.score : a.pos > b.pos;  // ties: more recent wins
  });
  for (int i = 0; i < std::min<int>(by_score, int(rest.size())); ++i) keep.insert(rest[i].pos);
  std::vector<RefToken> out;
  for (auto& t : by_pos)
    if (keep.count(t.pos)) out.push_back(t);
  return out;
}

// Drives a CpuCache and the reference with the same random attention rows
// (quantised to multiples of 1/8, so that equal scores really occur).
void check_policy(const PolicyConfig& policy, int steps, uint32_t seed) {
  ModelConfig cfg;
  cfg.dim = 16, cfg.hidden_dim = 16, cfg.n_layers = 3, cfg.n_heads = 4, cfg.n_kv_heads = 2, cfg.vocab_size = 8,
  cfg.max_seq_len = 64;
  const int group = cfg.group_size();
  CpuCache cache(policy, cfg);
  std::map<std::pair<int, int>, std::vector<RefToken>> ref;
  std::mt19937 rng(seed);

  for (int t = 0; t < steps; ++t) {
    cache.reserve_for(1);
    std::vector<EvictionEvent> events, ref_events;
    for (int l = 0; l < cfg.n_layers; ++l)
      for (int g = 0; g < cfg.n_kv_heads; ++g) {
        CpuHeadCache& h = cache.head(l, g);
        auto& r = ref[{l, g}];
        h.pos[h.n] = t;
        h.score[h.n] = 0;
        ++h.n;
        r.push_back({t, 0.0});
        ASSERT_EQ(h.n, int(r.size()));
        // What of each score carries (all for H2O, none for TOVA).
        for (int j = 0; j < h.n; ++j) h.score[j] = policy.rule().score.carried(h.score[j]);
        for (int q = 0; q < group; ++q) {
          // Sparse, quantised probabilities: most mass on a few keys.
          std::vector<int> weight(h.n);
          int total = 0;
          for (auto& w : weight) total += w = (rng() % 4 == 0) ? int(rng() % 8) : 0;
          if (total == 0) weight[h.n - 1] = total = 1;
          for (int j = 0; j < h.n; ++j) {
            const float p = float(weight[j]) / float(total);
            h.score[j] += p;
            r[j].score += p;
          }
        }
        // Float and double sums of the same values can differ in the last
        // bit; keep the reference on the cache's own float scores.
        for (int j = 0; j < h.n; ++j) r[j].score = h.score[j];
        cache.cut(l, g, events);
        const auto kept = reference_cut(policy, r);
        std::set<int32_t> kept_pos;
        for (auto& k : kept) kept_pos.insert(k.pos);
        for (auto& k : r)
          if (!kept_pos.count(k.pos)) ref_events.push_back({l, g, k.pos});
        r = kept;
        ASSERT_EQ(h.n, int(r.size())) << "step " << t << " layer " << l << " head " << g;
        for (int j = 0; j < h.n; ++j) ASSERT_EQ(h.pos[j], r[j].pos) << "step " << t << " slot " << j;
        if (policy.evicts()) {
          ASSERT_LE(h.n, policy.budget() + policy.slack);
        }
      }
    ASSERT_EQ(events.size(), ref_events.size()) << "step " << t;
    for (size_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(events[i].layer, ref_events[i].layer);
      EXPECT_EQ(events[i].kv_head, ref_events[i].kv_head);
      EXPECT_EQ(events[i].position, ref_events[i].position);
    }
    cache.end_forward(1, std::move(events));
  }
}

PolicyConfig h2o_policy(int sinks, int heavy, int recent, int slack = 0) {
  PolicyConfig p = PolicyConfig::named("h2o").set("sinks", sinks).set("heavy", heavy).set("recent", recent);
  p.slack = slack;
  return p;
}

PolicyConfig streaming_policy(int sinks, int window, int slack = 0) {
  PolicyConfig p = PolicyConfig::named("streaming").set("sinks", sinks).set("window", window);
  p.slack = slack;
  return p;
}

PolicyConfig tova_policy(int sinks, int window, int slack = 0) {
  PolicyConfig p = PolicyConfig::named("tova").set("sinks", sinks).set("window", window);
  p.slack = slack;
  return p;
}

}  // namespace

TEST(CachePolicy, H2OMatchesBruteForce) {
  for (uint32_t seed = 1; seed <= 5; ++seed) check_policy(h2o_policy(4, 6, 5), 80, seed);
}

TEST(CachePolicy, H2OWithoutSinksIsThePapersPolicy) { check_policy(h2o_policy(0, 8, 4), 80, 7); }

TEST(CachePolicy, H2OOnlyRecentAndSinks) { check_policy(h2o_policy(2, 0, 6), 40, 8); }

TEST(CachePolicy, H2OWithSlackCutsInOneCompaction) { check_policy(h2o_policy(3, 5, 4, 7), 90, 9); }

TEST(CachePolicy, StreamingMatchesBruteForce) {
  check_policy(streaming_policy(4, 10), 60, 3);
  check_policy(streaming_policy(0, 5), 30, 4);
  check_policy(streaming_policy(2, 6, 5), 50, 5);
}

TEST(CachePolicy, TovaMatchesBruteForce) {
  for (uint32_t seed = 1; seed <= 5; ++seed) check_policy(tova_policy(4, 6), 80, seed);
  check_policy(tova_policy(0, 5), 40, 11);      // no sinks: the paper's policy
  check_policy(tova_policy(2, 6, 5), 60, 12);   // with slack
}

TEST(CachePolicy, TovaMayEvictTheNewestToken) {
  const PolicyConfig p = tova_policy(1, 2);
  const std::vector<int32_t> pos = {0, 1, 2, 3, 4};
  const std::vector<float> score = {0, 5, 4, 3, 0.1f};  // the newest (slot 4) is attended least
  EXPECT_EQ(select_kept(p.rule(), pos, score), (std::vector<int>{0, 1, 2}));
  const std::vector<float> tie = {0, 1, 1, 1, 1};  // ties go to the more recent
  EXPECT_EQ(select_kept(p.rule(), pos, tie), (std::vector<int>{0, 3, 4}));
}

TEST(CachePolicy, FullNeverEvicts) {
  PolicyConfig full;
  check_policy(full, 50, 6);
}

TEST(CachePolicy, TiesGoToTheMoreRecentToken) {
  const PolicyConfig p = h2o_policy(1, 2, 1);
  const std::vector<int32_t> pos = {0, 1, 2, 3, 4, 5};
  const std::vector<float> score = {9, 1, 1, 1, 1, 0};  // slots 1..4 tie
  const auto kept = select_kept(p.rule(), pos, score);
  EXPECT_EQ(kept, (std::vector<int>{0, 3, 4, 5}));
}

// The kept middle against a full ranking of every middle slot (score, then
// the more recent on ties), with scores drawn from a few values so that ties
// are common, cutting one slot (no slack) or many (slack) at a time.
TEST(CachePolicy, SelectKeptEqualsFullRanking) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> level(0, 4);
  for (const auto& [heavy, slack] : {std::pair{6, 0}, {6, 9}, {1, 0}, {20, 30}})
    for (int n = 1; n <= 64; ++n) {
      const PolicyConfig p = h2o_policy(2, heavy, 3, slack);
      std::vector<int32_t> pos(static_cast<size_t>(n));
      std::vector<float> score(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) pos[size_t(i)] = i, score[size_t(i)] = 0.25f * float(level(rng));
      std::vector<int> expected;
      if (n <= p.rule().budget + slack) {
        for (int i = 0; i < n; ++i) expected.push_back(i);
      } else {
        std::vector<int> middle;
        for (int i = 2; i < n - 3; ++i) middle.push_back(i);
        std::sort(middle.begin(), middle.end(), [&](int a, int b) {
          return score[size_t(a)] != score[size_t(b)] ? score[size_t(a)] > score[size_t(b)] : a > b;
        });
        middle.resize(std::min(middle.size(), size_t(heavy)));
        expected = {0, 1};
        expected.insert(expected.end(), middle.begin(), middle.end());
        for (int i = n - 3; i < n; ++i) expected.push_back(i);
        std::sort(expected.begin(), expected.end());
      }
      ASSERT_EQ(select_kept(p.rule(), pos, score), expected) << "heavy " << heavy << ", slack " << slack << ", n " << n;
    }
}

TEST(CachePolicy, NoCutBelowBudgetPlusSlack) {
  const PolicyConfig p = h2o_policy(1, 2, 1, 3);
  std::vector<int32_t> pos = {0, 1, 2, 3, 4, 5, 6};  // 7 = budget 4 + slack 3
  std::vector<float> score(7, 0.5f);
  EXPECT_EQ(select_kept(p.rule(), pos, score).size(), 7u);
  pos.push_back(7);
  score.push_back(0.5f);
  EXPECT_EQ(select_kept(p.rule(), pos, score).size(), 4u);  // cut back to the budget, not to budget + slack
}

TEST(CachePolicy, CompactionFreesMemoryAndKeepsValues) {
  ModelConfig cfg;
  cfg.dim = 8, cfg.hidden_dim = 8, cfg.n_layers = 1, cfg.n_heads = 1, cfg.n_kv_heads = 1, cfg.vocab_size = 8;
  cfg.max_seq_len = 8;
  CpuCache cache(streaming_policy(1, 2), cfg);
  cache.reserve_for(5);
  CpuHeadCache& h = cache.head(0, 0);
  for (int i = 0; i < 5; ++i) {
    h.pos[i] = i;
    for (int d = 0; d < 8; ++d) h.v[i * 8 + d] = h.k[i * 8 + d] = float(i * 100 + d);
  }
  h.n = 5;
  std::vector<EvictionEvent> ev;
  cache.cut(0, 0, ev);
  ASSERT_EQ(h.n, 3);
  EXPECT_EQ(cache.read_layer(0).positions[0], (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(h.v[1 * 8 + 2], 302.0f);  // position 3's value moved to slot 1
  EXPECT_EQ(h.k[2 * 8 + 7], 407.0f);
  EXPECT_EQ(cache.live_bytes(), 3 * 8 * 2 * 4);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].position, 1);
  EXPECT_EQ(ev[1].position, 2);
}

TEST(CachePolicy, InvalidSettingsAreRejected) {
  EXPECT_THROW(streaming_policy(4, 0).validate(), Error);
  EXPECT_THROW(h2o_policy(4, 4, 0).validate(), Error);
  EXPECT_THROW(h2o_policy(-1, 4, 4).validate(), Error);
  EXPECT_THROW(PolicyConfig::named("lru"), Error);
  EXPECT_THROW(tova_policy(4, 0).validate(), Error);
  try {
    streaming_policy(4, 0).validate();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--window"), std::string::npos);
  }
}

// A budget costs memory only as the stream fills it: a bounded cache grows
// by half (64 rows at least) like the full one, and never past budget +
// slack + rows. A budget of a million tokens on a short stream holds 64 rows.
TEST(CpuCacheGrowth, BoundedCacheGrowsAsItFillsUpToItsBudget) {
  ModelConfig cfg;
  cfg.dim = 16, cfg.hidden_dim = 16, cfg.n_layers = 2, cfg.n_heads = 4, cfg.n_kv_heads = 2, cfg.vocab_size = 8,
  cfg.max_seq_len = 64;
  const int64_t row = 4 * 4 * 2 * 2 * 2;  // head dim 4, f32 K and V, 2 layers x 2 KV heads
  PolicySettings s;
  s.budget = 1000000;
  CpuCache large(make_policy("streaming", s), cfg);
  large.reserve_for(1);
  EXPECT_EQ(large.allocated_bytes(), 64 * row);
  for (int rows = 64; rows < 200; ++rows) {
    for (int l = 0; l < 2; ++l)
      for (int g = 0; g < 2; ++g) large.head(l, g).n = rows;
    large.reserve_for(1);
  }
  EXPECT_EQ(large.allocated_bytes(), 216 * row) << "64, 96, 144, 216 rows";

  s.budget = 100;
  s.slack = 10;
  CpuCache small(make_policy("h2o", s), cfg);
  small.reserve_for(1);
  EXPECT_EQ(small.allocated_bytes(), 64 * row);
  for (int l = 0; l < 2; ++l)
    for (int g = 0; g < 2; ++g) small.head(l, g).n = 64;
  small.reserve_for(1);
  EXPECT_EQ(small.allocated_bytes(), 96 * row);
  for (int l = 0; l < 2; ++l)
    for (int g = 0; g < 2; ++g) small.head(l, g).n = 96;
  small.reserve_for(1);
  EXPECT_EQ(small.allocated_bytes(), 111 * row) << "capped at budget + slack + rows, not 144";
}

// Budgets a KV head could never hold are refused before any int overflows:
// each part, the slack and their sum at most kMaxCacheTokens.
TEST(PolicyBounds, BudgetsAndPartsAreBounded) {
  const auto message = [](const char* kind, PolicySettings s) {
    try {
      make_policy(kind, s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  PolicySettings s;
  s.budget = 2147483647;
  EXPECT_EQ(message("h2o", s), "--budget: 2147483647 is more than the tokens a KV head may hold (16777216)");
  s.budget = kMaxCacheTokens;
  EXPECT_EQ(message("h2o", s), "accepted");
  s.slack = 1;
  EXPECT_EQ(message("h2o", s),
            "--budget: the parts and the slack add up to 16777217, more than the tokens a KV head may hold (16777216)");
  PolicySettings parts;
  parts.given["window"] = 2147483647;
  EXPECT_EQ(message("streaming", parts), "--window: 2147483647 is more than the tokens a KV head may hold (16777216)");
  parts.given["window"] = kMaxCacheTokens;  // + 4 sinks
  EXPECT_NE(message("streaming", parts).find("--budget: the parts and the slack add up to 16777220"), std::string::npos);
  PolicySettings slack;
  slack.slack = 2147483647;
  EXPECT_EQ(message("streaming", slack), "--slack: 2147483647 is more than the tokens a KV head may hold (16777216)");
}
