// The rules every backend's KV cache shares (core/runtime/cache_book.h and
// core/policy/cut_shape.h): the cut's index arithmetic as the host predicts it
// and the CUDA eviction kernel applies it, against select_kept(); the growth rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "core/policy/cut_shape.h"
#include "core/policy/kept_set.h"
#include "core/runtime/cache_book.h"

using namespace h2o;

namespace {

struct RandomHead {
  std::vector<int32_t> positions;
  std::vector<float> scores;
  int64_t seen = 0;
};

// A head as a cache would hold it: the first sinks of the stream, then a
// sorted random subset of later positions; scores quantised so ties happen.
RandomHead random_head(std::mt19937& rng, int n, int sinks) {
  RandomHead h;
  h.seen = n + int64_t(rng() % 50);
  const int present = int(std::min<int64_t>(sinks, h.seen));  // sinks are never evicted
  std::set<int32_t> chosen;
  if (n < present + 1) {
    h.seen = n;  // nothing evicted yet
    for (int p = 0; p < n; ++p) chosen.insert(p);
  } else {
    for (int p = 0; p < present; ++p) chosen.insert(p);
    chosen.insert(int32_t(h.seen - 1));  // the newest token was just appended
    while (int(chosen.size()) < n) chosen.insert(int32_t(present + int64_t(rng() % uint64_t(h.seen - 1 - present))));
  }
  h.positions.assign(chosen.begin(), chosen.end());
  for (size_t i = 0; i < h.positions.size(); ++i) h.scores.push_back(float(rng() % 7) * 0.25f);
  return h;
}

// The kept set as the eviction kernel (kernels/evict.cu) computes it: the cut's shape, then the
// by_score largest survival keys of the middle slots.
std::vector<int> kept_by_survival_key(const EvictionRule& rule, const RandomHead& h) {
  const int n = int(h.positions.size());
  int sinks = 0;
  while (sinks < n && h.positions[size_t(sinks)] < rule.sinks) ++sinks;
  const CutShape c = cut_shape(n, sinks, rule.recent, rule.by_score);
  std::vector<uint64_t> keys;
  for (int j = c.sinks; j < c.recent_begin; ++j) keys.push_back(survival_key(h.scores[size_t(j)], j));
  std::sort(keys.rbegin(), keys.rend());
  const uint64_t threshold = c.by_score > 0 ? keys[size_t(c.by_score - 1)] : ~0ull;
  std::vector<int> kept;
  for (int j = 0; j < n; ++j)
    if (j < c.sinks || j >= c.recent_begin || (c.by_score > 0 && survival_key(h.scores[size_t(j)], j) >= threshold))
      kept.push_back(j);
  EXPECT_EQ(int(kept.size()), c.kept);
  return kept;
}

}  // namespace

TEST(CacheBook, SurvivalKeysKeepWhatSelectKeptKeeps) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    EvictionRule rule;
    rule.sinks = int(rng() % 5);
    rule.recent = int(rng() % 12);
    rule.by_score = int(rng() % 12);
    rule.score = kAccumulatedScore;
    rule.budget = rule.sinks + rule.recent + rule.by_score;
    if (rule.budget == 0) continue;
    const int n = rule.budget + 1 + int(rng() % 20);
    const RandomHead h = random_head(rng, n, rule.sinks);
    const std::vector<int> expected = select_kept(rule, h.positions, h.scores);
    ASSERT_EQ(kept_by_survival_key(rule, h), expected) << "trial " << trial;
  }
}

TEST(CacheBook, PredictedCountsMatchSelectKept) {
  // The host sizes the evicted readback from its own bookkeeping: the count
  // must be select_kept's for any head of any cache.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 400; ++trial) {
    EvictionRule rule;
    rule.sinks = int(rng() % 6);
    rule.recent = int(rng() % 10);
    rule.by_score = int(rng() % 10);
    rule.budget = rule.sinks + rule.recent + rule.by_score;
    rule.slack = int(rng() % 3);
    if (rule.budget == 0) continue;
    const int n = 1 + int(rng() % 40);
    const RandomHead h = random_head(rng, n, rule.sinks);
    const int keys = int(h.positions.size());
    const std::vector<int> kept = select_kept(rule, h.positions, h.scores);
    if (!rule.cut_due(keys)) EXPECT_EQ(int(kept.size()), keys) << "trial " << trial;
    else EXPECT_EQ(predicted_cut(rule, keys, h.seen).kept, int(kept.size())) << "trial " << trial;
  }
}

TEST(CacheBook, SurvivalKeyOrdersScoresThenRecency) {
  EXPECT_GT(survival_key(0.5f, 3), survival_key(0.25f, 9));
  EXPECT_GT(survival_key(0.5f, 9), survival_key(0.5f, 3));  // ties: the more recent slot
  EXPECT_EQ(survival_key(-0.0f, 4), survival_key(0.0f, 4));
  EXPECT_GT(survival_key(0.0f, 0), survival_key(-1.0f, 7));
  EXPECT_GT(survival_key(-1.0f, 0), survival_key(-2.0f, 7));
}

TEST(CacheBook, CachesGrowByHalfAndABoundedOneNotPastBudgetSlackAndRows) {
  // The full cache: 64 rows, then by half (what the KV-limit tests count on).
  EvictionRule full;
  std::vector<int> caps;
  int cap = 0;
  for (int held = 0; held < 300; ++held) {
    const int next = grown_capacity(full, held, cap, 1);
    if (next != cap) caps.push_back(next);
    cap = next;
  }
  EXPECT_EQ(caps, (std::vector<int>{64, 96, 144, 216, 324}));
  EXPECT_EQ(grown_capacity(full, 0, 0, 100), 100);  // a long prefill chunk at once
  // A bounded rule: as the full cache, but never past budget + slack + the step's rows.
  EvictionRule bounded{4, 10, 10, kAccumulatedScore, 24, 3, false};
  EXPECT_EQ(grown_capacity(bounded, 0, 0, 1), 28);
  EXPECT_EQ(grown_capacity(bounded, 24, 28, 1), 28);
  EXPECT_EQ(grown_capacity(bounded, 24, 28, 64), 24 + 64);  // what it holds and the rows: under budget + slack + rows
  // A large budget costs memory as the cache fills, not up front.
  EvictionRule large{4, 500000, 499996, kAccumulatedScore, 1000000, 0, false};
  EXPECT_EQ(grown_capacity(large, 0, 0, 1), 64);
  EXPECT_EQ(grown_capacity(large, 64, 64, 1), 96);
  EXPECT_EQ(grown_capacity(large, 999999, 999999, 1), 1000001);  // budget + slack + rows
}

TEST(CacheBook, ALowBitRunGrowsFromItsOwnLeastAndTheLimitBindsUnlessNeeded) {
  EXPECT_EQ(grown_capacity(0, 1, 1000, 4), 4);    // group numbers: 4 groups at least
  EXPECT_EQ(grown_capacity(4, 5, 1000, 4), 6);    // by half
  EXPECT_EQ(grown_capacity(64, 65, 70, 64), 70);  // not past the limit...
  EXPECT_EQ(grown_capacity(64, 80, 70, 64), 80);  // ...unless the step needs it
  EXPECT_EQ(grown_capacity(64, 64, 70, 64), 64);  // what fits keeps its capacity
  EvictionRule full;
  EXPECT_EQ(capacity_limit(full, 1), kMaxCacheTokens);
  EvictionRule bounded{4, 10, 10, kAccumulatedScore, 24, 3, false};
  EXPECT_EQ(capacity_limit(bounded, 5), 24 + 3 + 5);
  EXPECT_FALSE(bounded.cut_due(27));
  EXPECT_TRUE(bounded.cut_due(28));
  EXPECT_FALSE(full.cut_due(1 << 20));
}

namespace {
// A cache with the book alone: what teacher forcing's rule needs.
struct BookOnly final : CacheBook {
  BookOnly() : CacheBook(PolicyConfig{}, 1, 1, std::make_shared<KvMemoryAccount>()) {}
  int size(int, int) const override { return 0; }
  LayerState read_layer(int) const override { return {}; }
  int64_t live_bytes() const override { return 0; }
  int64_t allocated_bytes() const override { return 0; }
};
}  // namespace

TEST(CacheBook, ForcedRowsCompareOnlyWithTheReferencesRowsOfTheSameStep) {
  BookOnly policy, reference;
  EXPECT_EQ(policy.same_step_reference(&reference), nullptr) << "nothing marked yet";
  reference.mark_forced_rows(8, 64);
  policy.mark_forced_rows(8, 64);
  EXPECT_EQ(policy.same_step_reference(&reference), &reference);
  EXPECT_EQ(policy.same_step_reference(nullptr), nullptr);
  // A reference that stopped keeps its last step's rows: behind, not compared.
  policy.mark_forced_rows(8, 72);
  EXPECT_EQ(policy.same_step_reference(&reference), nullptr);
  // The same step with other rows (a shorter last chunk elsewhere) does not compare either.
  reference.mark_forced_rows(6, 72);
  EXPECT_EQ(policy.same_step_reference(&reference), nullptr);
  reference.mark_forced_rows(8, 72);
  EXPECT_EQ(policy.same_step_reference(&reference), &reference);
  EXPECT_EQ(reference.forced_rows(), 8);
}
