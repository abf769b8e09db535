// A policy's whole history (core/analysis/stream_history.h): the layer's
// merged eviction step, kept as heads let positions go, is what merging every
// KV head at read time gives — a position is held while any head of the
// layer holds it, and gone at the step its last head let it go.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/analysis/stream_history.h"

using namespace h2o;

namespace {

// The merge as first written: every head read at every call.
std::vector<int32_t> merged_by_hand(const PolicyHistory& h, int layer, int kv_heads) {
  std::vector<int32_t> out(size_t(h.length()), -1);
  for (int64_t p = 0; p < h.length(); ++p) {
    int32_t last = 0;
    bool held = false;
    for (int kv = 0; kv < kv_heads; ++kv) {
      const int32_t at = h.evicted_at(layer, kv, p);
      held = held || at < 0;
      last = std::max(last, at);
    }
    out[size_t(p)] = held ? -1 : last;
  }
  return out;
}

}  // namespace

TEST(PolicyHistory, ALayersMergedEvictionsAreItsHeadsMergedAtEveryStep) {
  constexpr int kLayers = 3, kHeads = 5;
  std::mt19937 rng(7);
  PolicyHistory h(PolicyConfig::named("h2o"), kLayers, kHeads);
  for (int64_t step = 0; step < 400; ++step) {
    h.feed(int(step % 50), "x", false, step);
    // Before the first per-head eviction, a few positions leave every head at once (the shared form).
    if (step < 40 && step % 9 == 8) h.evict_everywhere(int64_t(rng() % uint32_t(h.length())), step);
    if (step >= 40) {
      for (int e = 0; e < 6; ++e)
        h.evict(int(rng() % kLayers), int(rng() % kHeads), int64_t(rng() % uint32_t(h.length())), step);
      if (step % 13 == 0) h.evict_everywhere(int64_t(rng() % uint32_t(h.length())), step);
    }
    PaneStep numbers;
    h.end_step(step, numbers, nullptr);
    if (step % 37 == 0 || step == 399) {
      for (int layer = 0; layer < kLayers; ++layer)
        ASSERT_EQ(h.evictions(layer, -1), merged_by_hand(h, layer, kHeads)) << "layer " << layer << ", step " << step;
    }
  }
  // Some positions are gone from a whole layer, others still held by one head.
  const std::vector<int32_t> layer0 = h.evictions(0, -1);
  EXPECT_GT(std::count_if(layer0.begin(), layer0.end(), [](int32_t s) { return s >= 0; }), 10);
  EXPECT_GT(std::count(layer0.begin(), layer0.end(), -1), 10);
  // A head that let a position go keeps its first step.
  const int64_t p = 3;
  const int32_t first = h.evicted_at(1, 2, p);
  h.feed(1, "y", false, 400);
  h.evict(1, 2, p, 400);
  EXPECT_EQ(h.evicted_at(1, 2, p), first >= 0 ? first : 400);
}
