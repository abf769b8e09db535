// The CUDA backend's host logic, in plain C++: step planning, graph buckets
// and their store, weight conversion. No device needed. (The cut's arithmetic
// and the growth rule it shares with the CPU cache: tests/runtime/test_cache_book.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/base/error.h"
#include "kernels/capture_layout.h"
#include "kernels/graph_cache.h"
#include "kernels/step_plan.h"
#include "kernels/weight_convert.h"

using namespace h2o;
using namespace h2o::kern;

TEST(CudaHostPlan, RowsTilesAndClassifiedRows) {
  std::vector<ItemShape> items(3);
  items[0].n_before = 10, items[0].rows = 1, items[0].choose = true;
  items[1].n_before = 300, items[1].rows = 5, items[1].forced_rows = 4;
  items[2].n_before = 0, items[2].rows = 3, items[2].logits = true, items[2].all_logits = true;
  const int group = 2;  // 4 rows per tile
  const StepPlan plan = plan_step(items, group);
  EXPECT_EQ(plan.rows, 9);
  EXPECT_EQ(plan.items[1].first_row, 1);
  EXPECT_EQ(plan.items[2].first_row, 6);
  EXPECT_EQ(plan.row_item, (std::vector<int>{0, 1, 1, 1, 1, 1, 2, 2, 2}));
  // Keys: 11, 305 and 3 fall in buckets of 256, 512 and 256; four tiles
  // (item 1 has two) whose buckets' halves sum to 768 keys, for one SM's four
  // blocks: splits of 192 keys.
  EXPECT_EQ(plan.max_keys, 305);
  EXPECT_EQ(plan.key_bucket, 512);
  EXPECT_EQ(plan.split_keys, 192);
  EXPECT_EQ(plan.splits, 2);
  EXPECT_EQ(plan.split_bucket, 3);
  EXPECT_EQ(plan.key_stride, 576);
  // Tiles cover every row once per split of its item's bucket (2, 3, 2), at
  // most tile_rows(group) rows each, splits in order.
  std::vector<int> covered(9, 0);
  const int splits_of[] = {2, 3, 2};
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const RowTile& t = plan.tiles[i];
    EXPECT_LE(t.row_count, tile_rows(group));
    const bool next_split = i > 0 && plan.tiles[i - 1].split + 1 < splits_of[plan.tiles[i - 1].item];
    EXPECT_EQ(t.split, next_split ? plan.tiles[i - 1].split + 1 : 0) << i;
    for (int r = 0; r < t.row_count; ++r) ++covered[size_t(plan.items[size_t(t.item)].first_row + t.row_begin + r)];
  }
  EXPECT_EQ(covered, (std::vector<int>{2, 3, 3, 3, 3, 3, 2, 2, 2}));
  EXPECT_EQ(plan.tiles.size(), 2u + 3 + 3 + 2);
  EXPECT_EQ(plan.tile_queries, 8);  // four rows x group 2
  // Classified: item 0's last row; item 1's four forced rows; all of item 2's.
  EXPECT_EQ(plan.classify, (std::vector<int>{0, 1, 2, 3, 4, 6, 7, 8}));
  EXPECT_EQ(plan.items[0].logit_row, (std::vector<int>{0}));
  EXPECT_EQ(plan.items[1].logit_row, (std::vector<int>{1, 2, 3, 4, -1}));
  EXPECT_EQ(plan.items[2].logit_row, (std::vector<int>{5, 6, 7}));
}

TEST(CudaHostPlan, CutsOnlyPastBudgetPlusSlack) {
  ItemShape s;
  s.rule.sinks = 4;
  s.rule.recent = 10;
  s.rule.by_score = 10;
  s.rule.budget = 24;
  s.rule.slack = 3;
  s.rule.score = kAccumulatedScore;
  s.rows = 1;
  s.n_before = 26;
  s.tokens_seen = 100;
  EXPECT_FALSE(plan_step(std::span(&s, 1), 1).items[0].cut);  // 27 = budget + slack
  s.n_before = 27;
  const StepPlan plan = plan_step(std::span(&s, 1), 1);
  EXPECT_TRUE(plan.items[0].cut);
  EXPECT_TRUE(plan.any_cut);
  EXPECT_EQ(plan.items[0].kept, 24);
  EXPECT_EQ(plan.items[0].evicted, 4);
  // A prefill chunk larger than the budget, early in the stream: fewer sinks seen than the rule's.
  s.n_before = 0;
  s.rows = 30;
  s.tokens_seen = 0;
  s.rule.slack = 0;
  const StepPlan early = plan_step(std::span(&s, 1), 1);
  EXPECT_EQ(early.items[0].kept, 24);
  s.rule.sinks = 40;  // many sinks: 40 sinks, 10 by score of the 20 between, 10 recent
  s.rule.budget = 60;
  s.rows = 70;
  EXPECT_EQ(plan_step(std::span(&s, 1), 1).items[0].kept, 60);
}

TEST(CudaHostPlan, SplitBucketsGrowByPowersOfTwo) {
  EXPECT_EQ(next_power_of_two(1), 1);
  EXPECT_EQ(next_power_of_two(3), 4);
  EXPECT_EQ(next_power_of_two(8), 8);
  ItemShape s;
  s.rows = 1;
  for (const SplitTarget target : {SplitTarget{1, 1}, SplitTarget{2, 16}, SplitTarget{32, 132}, SplitTarget{4, 132}})
    for (int keys : {1, 256, 257, 700, 1024, 1025, 2048, 2049, 8192}) {
      s.n_before = keys - 1;
      const StepPlan p = plan_step(std::span(&s, 1), 1, target);
      const std::string at = std::to_string(keys) + " keys, " + std::to_string(target.kv_heads) + " KV heads";
      EXPECT_EQ(p.key_bucket % kKeyBucket, 0) << at;
      EXPECT_EQ(p.key_bucket / kKeyBucket, next_power_of_two(p.key_bucket / kKeyBucket)) << at;
      EXPECT_GE(p.key_bucket, keys) << at;
      EXPECT_TRUE(p.key_bucket == kKeyBucket || p.key_bucket < 2 * keys) << at;
      EXPECT_EQ(p.split_keys % kSplitGranule, 0) << at;
      EXPECT_GE(p.split_keys, kMinSplitKeys) << at;
      EXPECT_EQ(p.splits, (keys + p.split_keys - 1) / p.split_keys) << at;
      EXPECT_LE(p.splits, p.split_bucket) << at;
      EXPECT_GE(p.key_stride, p.key_bucket) << at;
      EXPECT_EQ(p.key_stride, p.split_bucket * p.split_keys) << at;
      // At least the target's blocks live from half the bucket up (where keys allow splits of kMinSplitKeys).
      const int wanted = kBlocksPerSm * target.sm_count / target.kv_heads;
      if (p.key_bucket / 2 >= wanted * kMinSplitKeys && keys > p.key_bucket / 2) {
        EXPECT_GE(p.splits, wanted) << at;
      }
    }
}

TEST(CudaHostPlan, SplitsFillAnH100AtLlama7B) {
  // 32 KV heads, 132 SMs, 2048 keys: one session gets 32 splits of 64 keys
  // (1024 blocks), four sessions 8 splits of 256 (1024 blocks again).
  ItemShape s;
  s.rows = 1;
  s.n_before = 2047;
  const SplitTarget h100{32, 132};
  const StepPlan one = plan_step(std::span(&s, 1), 1, h100);
  EXPECT_EQ(one.split_keys, 64);
  EXPECT_EQ(one.split_bucket, 32);
  const std::vector<ItemShape> four(4, s);
  const StepPlan p4 = plan_step(four, 1, h100);
  EXPECT_EQ(p4.split_keys, 256);
  EXPECT_EQ(p4.split_bucket, 8);
  EXPECT_EQ(p4.tile_queries, 1);
  // The low end of the bucket (1025 keys) still has 17 and 5 live splits.
  s.n_before = 1024;
  EXPECT_EQ(plan_step(std::span(&s, 1), 1, h100).splits, 17);
  EXPECT_EQ(plan_step(std::vector<ItemShape>(4, s), 1, h100).splits, 5);
}

// The app's stream at a GPU's shapes: a full cache grown to 16384 keys beside
// three evicting panes at a budget of 1024. Splits are sized by what every
// tile holds, not as if each were the longest: the blocks that have keys
// fill an H100 (sized as if all four held 16384 keys, splits of 2048 gave 8
// blocks a KV head to the long cache and one to each short one: 352 live
// blocks of 2048 keys on 132 SMs), and no tile gets more blocks than its own
// bucket asks for.
TEST(CudaHostPlan, ShortItemsBesideALongOneStillFillTheDevice) {
  const SplitTarget h100{32, 132};
  std::vector<ItemShape> panes(4);
  for (ItemShape& s : panes) s.rows = 1, s.n_before = 1030;
  panes[0].n_before = 16383;
  const StepPlan plan = plan_step(panes, 1, h100);
  EXPECT_EQ(plan.key_bucket, 16384);
  // Halves of 16384 and 3 x 2048: 11264 keys over 16 splits a KV head.
  EXPECT_EQ(plan.split_keys, 704);
  int live = 0, blocks = 0;
  for (const RowTile& t : plan.tiles) {
    const int keys = plan.items[size_t(t.item)].keys;
    blocks += h100.kv_heads;
    if (t.split * plan.split_keys < keys) live += h100.kv_heads;
    EXPECT_LT(t.split * plan.split_keys, key_bucket_of(keys)) << "a split past its item's bucket";
  }
  EXPECT_GE(live, kBlocksPerSm * h100.sm_count);
  EXPECT_LE(live, 2 * kBlocksPerSm * h100.sm_count + int(panes.size()) * h100.kv_heads);
  EXPECT_LE(blocks, 2 * live);
  EXPECT_EQ(plan.split_bucket, (16384 + 703) / 704);
}

TEST(CudaHostPlan, BlockLayoutAligns) {
  BlockLayout l;
  EXPECT_EQ(l.add(3), 0u);
  EXPECT_EQ(l.add(8, 8), 8u);
  EXPECT_EQ(l.add(1), 16u);
  EXPECT_EQ(l.add(0), 32u);
  EXPECT_EQ(l.size(), 32u);
}

// Quantized caches' tiles go last (attention_low_bit takes them), each
// item's in row order, and their count is part of the graph key.
TEST(CudaHostPlan, QuantizedItemsTilesComeLast) {
  std::vector<ItemShape> items(3);
  for (ItemShape& s : items) s.rows = 20, s.choose = true;
  items[0].low_bit = true;
  const StepPlan plan = plan_step(items, 1);
  ASSERT_EQ(plan.split_bucket, 1);  // 20 keys: one split each
  const int per_item = (20 + tile_rows(1) - 1) / tile_rows(1);
  ASSERT_EQ(int(plan.tiles.size()), 3 * per_item);
  EXPECT_EQ(plan.low_bit_tiles, per_item);
  for (int t = 0; t < int(plan.tiles.size()); ++t) {
    const RowTile& tile = plan.tiles[size_t(t)];
    EXPECT_EQ(tile.item == 0, t >= 2 * per_item) << t;
    if (t > 0 && plan.tiles[size_t(t - 1)].item == tile.item) {
      EXPECT_EQ(tile.row_begin, plan.tiles[size_t(t - 1)].row_begin + plan.tiles[size_t(t - 1)].row_count);
    }
  }
  EXPECT_EQ(plan.items[1].first_row, 20);  // rows stay in item order
  for (ItemShape& s : items) s.rows = 1;
  const GraphKey mixed = graph_key(plan_step(items, 1), 0);
  items[0].low_bit = false;
  EXPECT_NE(graph_key(plan_step(items, 1), 0), mixed);
}

TEST(CudaHostGraphs, KeySeparatesShapesButNotLengthsWithinABucket) {
  ItemShape s;
  s.rows = 1;
  s.choose = true;
  s.n_before = 300;
  const GraphKey a = graph_key(plan_step(std::span(&s, 1), 1), 0);
  s.n_before = 500;  // still the 512-key bucket
  EXPECT_EQ(graph_key(plan_step(std::span(&s, 1), 1), 0), a);
  const SplitTarget gpu{4, 132};  // many splits: still one key for the bucket
  EXPECT_EQ(graph_key(plan_step(std::span(&s, 1), 1, gpu), 0), graph_key(plan_step(std::span(&s, 1), 1, gpu), 0));
  s.n_before = 300;
  const GraphKey many = graph_key(plan_step(std::span(&s, 1), 1, gpu), 0);
  s.n_before = 500;
  EXPECT_EQ(graph_key(plan_step(std::span(&s, 1), 1, gpu), 0), many);
  s.n_before = 600;  // the 1024-key bucket
  EXPECT_NE(graph_key(plan_step(std::span(&s, 1), 1), 0), a);
  EXPECT_NE(graph_key(plan_step(std::span(&s, 1), 1, gpu), 0), many);
  s.n_before = 300;
  EXPECT_NE(graph_key(plan_step(std::span(&s, 1), 1), 1), a);  // buffers moved
  std::vector<ItemShape> two(2, s);
  EXPECT_NE(graph_key(plan_step(two, 1), 0), a);
}

TEST(CudaHostGraphs, CacheKeepsTheMostRecentlyUsed) {
  std::vector<int> destroyed;
  {
    GraphCache<int> cache(2, [&](int g) { destroyed.push_back(g); });
    GraphKey k1, k2, k3;
    k1.items = 1, k2.items = 2, k3.items = 3;
    EXPECT_FALSE(cache.find(k1));
    cache.insert(k1, 10);
    cache.insert(k2, 20);
    EXPECT_EQ(cache.find(k1), 10);  // k1 now the most recent
    cache.insert(k3, 30);           // drops k2
    EXPECT_EQ(destroyed, std::vector<int>{20});
    EXPECT_FALSE(cache.find(k2));
    EXPECT_EQ(cache.find(k3), 30);
    EXPECT_EQ(cache.hits(), 2);
    EXPECT_EQ(cache.misses(), 2);
    EXPECT_FALSE(cache.seen_before(k1));  // captured on its second sight
    EXPECT_TRUE(cache.seen_before(k1));
    cache.clear();
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_FALSE(cache.seen_before(k1));  // a clear (buffers moved) forgets what was seen
    cache.insert(k1, 11);
  }
  std::sort(destroyed.begin(), destroyed.end());
  EXPECT_EQ(destroyed, (std::vector<int>{10, 11, 20, 30}));
}

TEST(CudaHostWeights, ConversionRoundsToNearestEven) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(1000);
  for (float& v : x) v = normal(rng);
  x[0] = 1.0f + 1.0f / 2048;  // halfway between two f16 values: rounds to even (1.0)
  x[1] = 65520.0f;            // past the largest f16: infinity
  std::vector<uint16_t> h(x.size()), b(x.size());
  convert_elements(x.data(), DType::F32, x.size(), DType::F16, h.data());
  convert_elements(x.data(), DType::F32, x.size(), DType::BF16, b.data());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], f32_to_f16(x[i]));
    EXPECT_EQ(b[i], f32_to_bf16(x[i]));
  }
  EXPECT_EQ(f16_to_f32(h[0]), 1.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(h[1])));
  // f16 -> bf16 goes through f32 exactly; f16 -> f32 is exact.
  std::vector<uint16_t> hb(x.size());
  std::vector<float> back(x.size());
  convert_elements(h.data(), DType::F16, h.size(), DType::BF16, hb.data());
  convert_elements(h.data(), DType::F16, h.size(), DType::F32, back.data());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(hb[i], f32_to_bf16(f16_to_f32(h[i])));
    EXPECT_EQ(back[i], f16_to_f32(h[i]));
  }
}

TEST(CudaHostCapture, LayoutTrimsAsEveryBackendAndDoesNotOverlap) {
  ModelDims d;
  d.layers = 3;
  d.heads = 4;
  d.kv_heads = 2;
  d.group = 2;
  const std::vector<CaptureRequest> first{{1, kAllHeads, 2, 0, 0, 3}, {1, kGroupMean, 1, 5, 2, 0}},
      second{{2, 3, 9, 4, 1, 2}};
  std::vector<AttentionCapture> out0, out1;
  const std::vector<CaptureJob> jobs{{0, 12, 3, 40, &first, &out0}, {2, 7, 1, 6, &second, &out1}};
  BlockLayout readback, inputs;
  readback.add(100);  // what the step reserved before
  const CaptureLayout layout(jobs, 3, d, readback, inputs);
  // The shapes the CPU backend gives: rows capped at what the step fed, query positions, heads per selection.
  ASSERT_EQ(out0.size(), 2u);
  EXPECT_EQ(out0[0].rows, 2);
  EXPECT_EQ(out0[0].query_positions, (std::vector<int32_t>{41, 42}));
  EXPECT_EQ(out0[0].probs.size(), 4u);
  EXPECT_EQ(out0[1].probs.size(), 2u);
  EXPECT_EQ(out1[0].rows, 1);
  EXPECT_EQ(out1[0].probs.size(), 1u);
  // Units: per request, one per KV head (positions) and one per captured head and row (probabilities).
  EXPECT_EQ(layout.unit_count(), size_t((2 + 4 * 2) + (2 + 2 * 1) + (2 + 1 * 1)));
  // Item 0's layer-1 slot holds its last 2 rows for both requests; item 2 only layer 2.
  std::vector<float> probs(layout.probs_floats());
  const std::vector<CaptureSlot> slots = layout.slots(probs.data());
  ASSERT_EQ(slots.size(), 9u);
  EXPECT_EQ(slots[1].rows, 2);
  EXPECT_EQ(slots[0].probs, nullptr);
  EXPECT_EQ(slots[2 * 3 + 2].rows, 1);
  EXPECT_EQ(layout.probs_floats(), size_t(2 * 4 * 12 + 1 * 4 * 7));
  // Kept slots as kept_key_slots; every piece in its own bytes of the readback.
  std::vector<char> back(readback.size(), 0), in(inputs.size(), 0);
  layout.write_lists(in.data());
  std::vector<float> work(layout.work_floats());
  const std::vector<CaptureUnit> units = layout.units(probs.data(), work.data(), in.data(), back.data());
  std::vector<int> owner(back.size(), -1);
  for (size_t k = 0; k < units.size(); ++k) {
    const CaptureUnit& u = units[k];
    const CaptureRequest& req = u.item == 0 ? first[u.layer == 1 && u.head == kGroupMean ? 1 : 0] : second[0];
    EXPECT_EQ(std::vector<int>(u.slots, u.slots + u.n_slots), kept_key_slots(u.n, req.max_keys, req.keep_first));
    auto claim = [&](const void* p, size_t bytes) {
      const size_t at = size_t(static_cast<const char*>(p) - back.data());
      ASSERT_LE(at + bytes, back.size());
      ASSERT_GE(at, 100u);
      for (size_t b = at; b < at + bytes; ++b) {
        ASSERT_EQ(owner[b], -1) << "unit " << k << " overlaps unit " << owner[b];
        owner[b] = int(k);
      }
    };
    if (u.kind == 1) {
      claim(u.out_positions, size_t(u.n_slots) * 4);
    } else {
      claim(u.out_probs, size_t(u.n_slots) * 4);
      claim(u.out_share, 8);
      EXPECT_GE(u.work, work.data());
      EXPECT_LE(u.work + u.n, work.data() + work.size());
    }
  }
  // Reading back: the share is the mean over rows with mass (NaN: a row without).
  for (const CaptureUnit& u : units) {
    if (u.kind == 1) {
      for (int s = 0; s < u.n_slots; ++s) u.out_positions[s] = 1000 + u.slots[s];
      continue;
    }
    for (int s = 0; s < u.n_slots; ++s) u.out_probs[s] = float(u.row);
    *u.out_share = u.item == 0 && u.captured == 1 && u.row == 1 ? NAN : 0.25 * (u.row + 1);
  }
  layout.read(back.data());
  EXPECT_EQ(out0[0].key_positions[1].front(), 1000);
  std::vector<float> rows_in_order(12, 0.0f);  // rows x kept slots, row-major
  rows_in_order.resize(24, 1.0f);
  EXPECT_EQ(out0[0].probs[0], rows_in_order);
  EXPECT_FLOAT_EQ(out0[0].top_share[0], (0.25f + 0.5f) / 2);
  EXPECT_FLOAT_EQ(out0[0].top_share[1], 0.25f);  // its second row had no mass
  EXPECT_TRUE(std::isnan(out0[1].top_share[0]));  // top_k 0: none asked
  EXPECT_EQ(out1[0].probs[0].size(), 4u);
}

