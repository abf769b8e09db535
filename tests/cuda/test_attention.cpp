// The attention kernels (attention_partial with its combine,
// attention_scores) against a float64 reference of SEMANTICS.md's attention
// and scores: one split and many, decode rows and causal prefill tiles, GQA
// groups of 1 to 8 (and 3), TOVA's current scores, f32, f16 and bf16 caches,
// head dims on the 16-byte vector path (whole and with idle lanes) and off it
// (a scalar tail, a cache that is not 16-byte aligned). attention_partial's
// block size is its own; scores run at two block sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "kernels/launch.h"
#include "kernels/step_plan.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/attention_reference.h"
#include "tests/cuda/device_array.h"
#include "tests/cuda/same_int8_inputs.h"
#include "tests/cuda/stored_values.h"

using namespace h2o;
using namespace h2o::kern;
using test::DeviceArray;
using test::TestStream;
using test::reference_attention;
using test::AttentionReference;

namespace {

class H2O_CUDA_SUITE(Attention) : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { H2O_REQUIRE_CUDA(); }
  int threads() const { return GetParam(); }
};

// A model shape, the cache's type and the device the splits are sized for.
struct Case {
  DType kv = DType::F32;
  int heads = 0, kv_heads = 0, head_dim = 0;
  int sm_count = 1;
  bool misaligned = false;  // the cache one element past a 16-byte boundary: the element-wise path
};

struct ItemCase {
  int n_before = 0, rows = 0;
  ScoreRule score;  // kAccumulatedScore (H2O), kCurrentScore (TOVA) or one that decays
};

ModelDims dims_of(const Case& c) {
  ModelDims d;
  d.layers = 1;
  d.heads = c.heads;
  d.kv_heads = c.kv_heads;
  d.group = c.heads / c.kv_heads;
  d.head_dim = c.head_dim;
  d.q_dim = d.heads * d.head_dim;
  d.kv_dim = d.kv_heads * d.head_dim;
  d.qkv_stride = d.q_dim + 2 * d.kv_dim;
  return d;
}

std::string describe(const Case& c) {
  return std::string(dtype_name(c.kv)) + " cache, " + std::to_string(c.heads) + " heads / " +
         std::to_string(c.kv_heads) + " KV heads x " + std::to_string(c.head_dim) + ", " + std::to_string(c.sm_count) +
         " SMs" + (c.misaligned ? ", misaligned" : "");
}

// One item's cache on the device and on the host (values as the device holds them).
struct ItemCache {
  std::unique_ptr<DeviceArray<uint8_t>> k, v;
  std::unique_ptr<DeviceArray<float>> score;
  std::vector<float> host_k, host_v, host_score;
};

ItemCache random_cache(std::mt19937& rng, const Case& c, int cap, gpu::Stream s) {
  std::normal_distribution<float> normal;
  const size_t pad = c.misaligned ? 1 : 0;
  ItemCache ic;
  std::vector<float> k(pad + size_t(c.kv_heads) * cap * c.head_dim), v(k.size());
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  ic.k = std::make_unique<DeviceArray<uint8_t>>(test::stored(k, c.kv), s);
  ic.v = std::make_unique<DeviceArray<uint8_t>>(test::stored(v, c.kv), s);
  k = test::rounded(k, c.kv), v = test::rounded(v, c.kv);
  ic.host_k.assign(k.begin() + std::ptrdiff_t(pad), k.end());
  ic.host_v.assign(v.begin() + std::ptrdiff_t(pad), v.end());
  ic.host_score.resize(size_t(c.kv_heads) * cap);
  for (float& x : ic.host_score) x = float(rng() % 4);
  ic.score = std::make_unique<DeviceArray<float>>(ic.host_score, s);
  return ic;
}

// Runs the attention and its scores over the items of one step and checks the
// outputs and scores against float64; the attention runs twice and must give
// the same bits (whichever split block of a tile combines it: the emulation
// varies the blocks' order), a third time writing the 8-bit rows quantize_int8
// makes of the output, where heads hold whole blocks of 32, and leaves its
// tiles' counters at zero every time.
void check_case(const Case& c, const std::vector<ItemCase>& shapes, int threads) {
  SCOPED_TRACE(describe(c));
  TestStream s;
  std::mt19937 rng(31 + uint32_t(c.head_dim));
  std::normal_distribution<float> normal;
  const ModelDims d = dims_of(c);
  std::vector<ItemShape> plan_items;
  int cap = 0;
  for (const ItemCase& sh : shapes) {
    ItemShape is;
    is.n_before = sh.n_before;
    is.rows = sh.rows;
    plan_items.push_back(is);
    cap = std::max(cap, sh.n_before + sh.rows + 3);
  }
  const StepPlan plan = plan_step(plan_items, d.group, {d.kv_heads, c.sm_count});
  std::vector<float> qkv(size_t(plan.rows) * d.qkv_stride);
  for (float& x : qkv) x = normal(rng);
  std::vector<ItemCache> caches;
  std::vector<ItemDesc> desc;
  const size_t pad = (c.misaligned ? 1 : 0) * size_t(dtype_size(c.kv));
  for (size_t i = 0; i < shapes.size(); ++i) {
    caches.push_back(random_cache(rng, c, cap, s.get()));
    ItemDesc it;
    it.cache = {caches.back().k->get() + pad, caches.back().v->get() + pad, nullptr, nullptr, caches.back().score->get(),
                cap, {}};
    it.n_before = shapes[i].n_before;
    it.rows = shapes[i].rows;
    it.first_row = plan.items[i].first_row;
    it.score = shapes[i].score;
    desc.push_back(it);
  }
  DeviceArray<ItemDesc> items(desc, s.get());
  DeviceArray<RowTile> tiles(plan.tiles, s.get());
  DeviceArray<float> q(qkv, s.get());
  DeviceArray<float> logits(size_t(plan.rows) * d.heads * plan.key_stride, s.get());
  DeviceArray<float> partials(size_t(plan.rows) * d.heads * plan.split_bucket * (d.head_dim + 2), s.get());
  DeviceArray<float> stats(size_t(plan.rows) * d.heads * 2, s.get());
  DeviceArray<float> out(size_t(plan.rows) * d.q_dim, s.get());
  DeviceArray<int> arrivals(std::vector<int>(size_t(plan.rows) * d.kv_heads, 0), s.get());
  const AttentionScratch scratch{logits.get(), plan.key_stride, partials.get(), plan.split_bucket,
                                 stats.get(),  plan.split_keys, arrivals.get()};
  const auto attend = [&](const AttentionOutput& o) {
    attention_partial(c.kv, q.get(), items.get(), tiles.get(), int(plan.tiles.size()), plan.tile_queries, 0, d,
                      scratch, o, s.get());
    for (int a : arrivals.read()) ASSERT_EQ(a, 0) << "a tile's counter left behind";
  };
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    attend({out.get(), DType::F32, {}});
    if (run == 0) first = out.read();
  }
  if (d.head_dim % kInt8BlockElems == 0) {  // the output projection's 8-bit input, written by the combine
    DeviceArray<float> fused(std::vector<float>(size_t(plan.rows) * d.q_dim, 0.0f), s.get());
    gpu::DeviceBuffer a(int8_rows_bytes(plan.rows, d.q_dim)), b(int8_rows_bytes(plan.rows, d.q_dim));
    attend({fused.get(), DType::F32, int8_rows_at(b.get(), plan.rows, d.q_dim)});
    test::expect_same_inputs(out, fused, a, b, plan.rows, d.q_dim, s, "the attention's combine");
  }
  attention_scores(items.get(), int(shapes.size()), plan.key_stride, 0, d, scratch, nullptr, threads, s.get());
  const auto got = out.read();
  ASSERT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * sizeof(float))) << "not deterministic";
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ItemCase& sh = shapes[i];
    std::vector<float> qi;
    for (int r = 0; r < sh.rows; ++r) {
      const float* row = &qkv[size_t(plan.items[i].first_row + r) * d.qkv_stride];
      qi.insert(qi.end(), row, row + d.q_dim);
    }
    const ItemCache& ic = caches[i];
    const AttentionReference ref =
        reference_attention(d, sh.n_before, sh.rows, qi, ic.host_k, ic.host_v, ic.host_score, cap, sh.score);
    for (int r = 0; r < sh.rows; ++r)
      for (int e = 0; e < d.q_dim; ++e)
        ASSERT_NEAR(got[size_t(plan.items[i].first_row + r) * d.q_dim + e], ref.out[size_t(r) * d.q_dim + e], 2e-5)
            << "item " << i << " row " << r << " element " << e;
    const auto sc = ic.score->read();
    const int keys = sh.n_before + sh.rows;
    for (int g = 0; g < d.kv_heads; ++g)
      for (int j = 0; j < keys; ++j)
        ASSERT_NEAR(sc[size_t(g) * cap + j], ref.score[size_t(g) * keys + j], 2e-5) << "item " << i << " key " << j;
  }
}

}  // namespace

H2O_CUDA_TEST_P(Attention, MatchesFloat64AcrossSplitsRowsAndGroups) {
  // Item 0 decodes one row over 600 keys (three splits); item 1 prefills 7
  // rows (two tiles) over 250 cached keys, crossing a split; item 2 is TOVA's
  // current scores, item 3 a score that keeps half of the last step's.
  check_case({DType::F32, 4, 2, 16, 1},
             {{599, 1, kAccumulatedScore}, {250, 7, kAccumulatedScore}, {40, 3, kCurrentScore}, {90, 2, {.carry = 0.5f}}},
             threads());
}

H2O_CUDA_TEST_P(Attention, EveryPathMatchesFloat64) {
  // Per case: a decode row over 700 keys (many splits where the case's SMs
  // ask for them), 9 prefill rows crossing splits, TOVA, a chunk from empty.
  const std::vector<ItemCase> items{
      {700, 1, kAccumulatedScore}, {130, 9, kAccumulatedScore}, {40, 3, kCurrentScore}, {0, 5, kAccumulatedScore}};
  const std::vector<Case> cases{
      {DType::F16, 4, 4, 128, 64},        // MHA, 16 lanes a key, 8 rows a tile
      {DType::F32, 4, 2, 128, 16},        // 32 lanes a key
      {DType::F16, 8, 2, 64, 32},         // group 4
      {DType::F16, 8, 1, 48, 8},          // group 8; 6 chunks a row on 8 lanes
      {DType::F16, 6, 2, 12, 64},         // group 3; 12 halves: the element-wise tail
      {DType::F32, 2, 2, 6, 1},           // 6 floats: the element-wise tail, one split
      {DType::F32, 8, 4, 8, 16},          // stories260K's shape: 2 lanes a key
      {DType::F16, 4, 2, 32, 16, true},   // a misaligned cache falls back to element-wise loads
      {DType::BF16, 4, 2, 64, 16},
  };
  for (const Case& c : cases) {
    check_case(c, items, threads());
    if (HasFatalFailure()) return;
  }
}

H2O_CUDA_INSTANTIATE(BlockSizes, Attention, ::testing::Values(32, 128),
                     [](const auto& info) { return "Threads" + std::to_string(info.param); });
