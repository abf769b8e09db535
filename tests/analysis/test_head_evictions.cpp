// The per-head eviction table (core/analysis/head_evictions.h) keeps ages in
// two bytes, so it must give back exactly the steps a plain table of steps
// holds: across its blocks of positions, for ages past what two bytes hold,
// and for a head that already let a position go.
#include <gtest/gtest.h>

#include <random>

#include "core/analysis/head_evictions.h"

using namespace h2o;

TEST(HeadEvictions, GivesBackTheStepsAPlainTableHoldsAcrossBlocksAndFarAges) {
  constexpr int kLayers = 2, kHeads = 3;
  constexpr int64_t kPositions = 9000;  // three blocks of 4096
  HeadEvictions table(kLayers, kHeads);
  std::vector<int32_t> birth;
  std::vector<int32_t> plain(size_t(kLayers * kHeads * kPositions), -1);
  for (int64_t p = 0; p < kPositions; ++p) {
    table.add_position();
    birth.push_back(int32_t(p * 10));  // 10 steps a position: the last is born at step 89,990
  }
  ASSERT_EQ(table.length(), kPositions);
  std::mt19937 rng(3);
  int far = 0;
  for (int n = 0; n < 20000; ++n) {
    const int layer = int(rng() % kLayers), kv = int(rng() % kHeads);
    const int64_t p = int64_t(rng() % uint32_t(kPositions));
    // Ages up to 200,000 steps: some past the 65,533 two bytes hold.
    const int32_t step = birth[size_t(p)] + int32_t(rng() % 200000);
    int32_t& want = plain[size_t((layer * kHeads + kv) * kPositions + p)];
    const bool first = want < 0;
    EXPECT_EQ(table.let_go(layer, kv, p, birth[size_t(p)], step), first);
    if (first) {
      want = step;
      far += step - birth[size_t(p)] >= 0xFFFE;
    }
  }
  EXPECT_GT(far, 1000);
  for (int layer = 0; layer < kLayers; ++layer)
    for (int kv = 0; kv < kHeads; ++kv) {
      const std::vector<int32_t> column = table.column(layer, kv, birth);
      ASSERT_EQ(column.size(), size_t(kPositions));
      for (int64_t p = 0; p < kPositions; ++p) {
        const int32_t want = plain[size_t((layer * kHeads + kv) * kPositions + p)];
        ASSERT_EQ(column[size_t(p)], want) << layer << "/" << kv << " position " << p;
        ASSERT_EQ(table.at(layer, kv, p, birth[size_t(p)]), want) << layer << "/" << kv << " position " << p;
      }
    }
  // Two bytes an entry, three blocks, plus the far ages' side table.
  EXPECT_GE(table.bytes(), 3 * 4096 * kLayers * kHeads * 2);
  EXPECT_LT(table.bytes(), 3 * 4096 * kLayers * kHeads * 2 + far * 64 + 65536);
}
