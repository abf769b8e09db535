// The kernels one at a time against the host code they must agree with:
// the sampler against choose_token(), the cut against select_kept() and the
// CPU cache's compaction, forced scores against score_forced_rows(),
// the small ops against the CPU ops (attention: test_attention.cpp).
// Each runs at two block sizes: results must not depend on it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <set>

#include "core/base/thread_pool.h"
#include "core/cpu/cpu_ops.h"
#include "core/model/rope.h"
#include "core/policy/kept_set.h"
#include "core/runtime/forced_scoring.h"
#include "core/runtime/sampler.h"
#include "kernels/blas.h"
#include "kernels/launch.h"
#include "kernels/step_plan.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/device_array.h"
#include "tests/cuda/stored_values.h"

using namespace h2o;
using namespace h2o::kern;
using test::DeviceArray;
using test::loaded;
using test::rounded;
using test::stored;
using test::TestStream;

namespace {

class H2O_CUDA_SUITE(Kernels) : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { H2O_REQUIRE_CUDA(); }
  int threads() const { return GetParam(); }
};

// Logits with ties: quantised, some rows flat, one with a single spike.
std::vector<std::vector<float>> logit_rows(std::mt19937& rng, int vocab) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<std::vector<float>> rows;
  for (int kind = 0; kind < 5; ++kind) {
    std::vector<float> r(static_cast<size_t>(vocab));
    for (float& x : r) {
      const float v = normal(rng);
      x = kind == 0 ? v : kind == 1 ? std::round(v * 2) / 2 : kind == 2 ? 0.0f : kind == 3 ? std::round(v) * 3 : v * 0.01f;
    }
    if (kind == 2) r[size_t(vocab / 3)] = 5.0f;
    rows.push_back(r);
  }
  // Four tokens of probability exactly 1/4, the rest none: running masses hit
  // top_p = 0.5 and u exactly, so "reaches" (>=) and "exceeds" (>) differ.
  std::vector<float> quarters(static_cast<size_t>(vocab), -1000.0f);
  for (int i : {3, 7, vocab - 9, vocab - 1}) quarters[size_t(i)] = 0.0f;
  rows.push_back(quarters);
  return rows;
}

}  // namespace

H2O_CUDA_TEST_P(Kernels, SamplerPicksWhatChooseTokenPicks) {
  TestStream s;
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int vocab : {512, 1000}) {
    const auto rows = logit_rows(rng, vocab);
    std::vector<float> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    DeviceArray<float> logits(flat, s.get());
    std::vector<SamplingConfig> configs;
    for (float t : {0.0f, 0.7f, 1.0f, 1.6f})
      for (float p : {1.0f, 0.95f, 0.5f, 0.05f}) configs.push_back({t, p, 0});
    // One launch per config: every row, many uniforms each (edges included).
    for (const SamplingConfig& c : configs) {
      std::vector<ChooseDesc> choices;
      std::vector<double> uniforms;
      DeviceArray<int32_t> out(rows.size() * 12, s.get());
      for (size_t r = 0; r < rows.size(); ++r)
        for (int k = 0; k < 12; ++k) {
          const double u = k == 0 ? 0.0 : k == 1 ? std::nextafter(1.0, 0.0) : k < 5 ? 0.25 * (k - 1) : uniform(rng);
          ChooseDesc d;
          d.mode = c.greedy() ? 1 : 2;
          d.logits_row = int(r);
          d.temperature = c.temperature;
          d.top_p = c.top_p;
          d.uniform = u;
          d.out = out.get() + choices.size();
          choices.push_back(d);
          uniforms.push_back(u);
        }
      DeviceArray<ChooseDesc> desc(choices, s.get());
      DeviceArray<double> scratch(choices.size() * size_t(vocab), s.get());
      sample(logits.get(), desc.get(), int(choices.size()), vocab, scratch.get(), threads(), s.get());
      const std::vector<int32_t> got = out.read();
      for (size_t k = 0; k < choices.size(); ++k) {
        const TokenChoice tc{c, uniforms[k]};
        ASSERT_EQ(got[k], choose_token(rows[size_t(choices[k].logits_row)], tc))
            << "vocab " << vocab << " row " << choices[k].logits_row << " T " << c.temperature << " top_p " << c.top_p
            << " u " << uniforms[k];
      }
    }
  }
}

namespace {

struct CutCase {
  EvictionRule rule;
  DType storage;
};

// One cache of 2 layers x 2 KV heads in a state a cache can be in: sinks
// first, then a sorted subset of later positions, the newest last; scores
// with ties.
struct CacheState {
  int n = 0, cap = 0, hd = 8;
  int64_t seen = 0;
  std::vector<int32_t> pos;
  std::vector<float> score, k, v, k_raw;
};

CacheState random_state(std::mt19937& rng, const EvictionRule& rule, int n, int heads, int hd) {
  CacheState c;
  c.n = n;
  c.hd = hd;
  c.cap = n + 3;
  c.seen = n + 20;
  c.pos.assign(size_t(heads) * c.cap, -7);
  c.score.assign(size_t(heads) * c.cap, -7);
  c.k.resize(size_t(heads) * c.cap * c.hd);
  c.v.resize(c.k.size());
  c.k_raw.resize(c.k.size());
  std::normal_distribution<float> normal;
  for (float& x : c.k) x = normal(rng);
  for (float& x : c.v) x = normal(rng);
  for (float& x : c.k_raw) x = normal(rng);
  for (int h = 0; h < heads; ++h) {
    std::set<int32_t> chosen;
    for (int p = 0; p < rule.sinks; ++p) chosen.insert(p);
    chosen.insert(int32_t(c.seen - 1));
    while (int(chosen.size()) < n) chosen.insert(int32_t(rule.sinks + rng() % uint32_t(c.seen - 1 - rule.sinks)));
    int j = 0;
    for (int32_t p : chosen) {
      c.pos[size_t(h) * c.cap + size_t(j)] = p;
      c.score[size_t(h) * c.cap + size_t(j)] = float(rng() % 5) * 0.5f;
      ++j;
    }
  }
  return c;
}

// The cut of random cache states against select_kept, per rule and storage type.
void check_cuts(TestStream& s, std::mt19937& rng, int head_dim, int threads) {
  ModelDims d;
  d.layers = 2;
  d.kv_heads = 2;
  d.head_dim = head_dim;
  // A frequency table unlike theta^(-2i/hd) alone (as a scaled RoPE's is):
  // re-rotation must turn each pair by the table's own frequency.
  std::vector<double> freqs(size_t(d.head_dim / 2));
  for (size_t i = 0; i < freqs.size(); ++i) freqs[i] = std::pow(10000.0, -2.0 * double(i) / d.head_dim) / double(1 + i % 2);
  const DeviceArray<double> freq_table(freqs, s.get());
  d.rope_freq = freq_table.get();
  const int heads = d.layers * d.kv_heads;
  std::vector<CutCase> cases;
  for (bool rolling : {false, true})
    for (DType t : {DType::F32, DType::F16}) {
      EvictionRule h2o{4, 6, 5, kAccumulatedScore, 15, 0, rolling};
      EvictionRule streaming{4, 11, 0, ScoreRule{}, 15, 0, rolling};
      EvictionRule tova{2, 0, 13, kCurrentScore, 15, 0, rolling};
      EvictionRule no_sinks{0, 3, 12, kAccumulatedScore, 15, 2, rolling};
      EvictionRule large{4, 100, 196, kAccumulatedScore, 300, 0, rolling};
      for (const EvictionRule& r : {h2o, streaming, tova, no_sinks, large}) cases.push_back({r, t});
    }
  for (const CutCase& cc : cases) {
    const EvictionRule& rule = cc.rule;
    for (int n : {rule.budget + rule.slack + 1, rule.budget + 17}) {
      const CacheState c = random_state(rng, rule, n, heads, head_dim);
      const DType t = cc.storage;
      // The cos/sin table the backend keeps for the cut under rolling positions.
      DeviceArray<float> rope(size_t(c.cap) * c.hd, s.get());
      rope_slots(d.rope_freq, rope.get(), c.cap, c.hd / 2, threads, s.get());
      DeviceArray<uint8_t> k(stored(c.k, t), s.get()), v(stored(c.v, t), s.get()), k_raw(stored(c.k_raw, t), s.get());
      DeviceArray<int32_t> pos(c.pos, s.get());
      DeviceArray<float> score(c.score, s.get());
      const int kept = predicted_cut(rule, n, c.seen).kept, evicted_per_head = n - kept;
      ItemDesc it;
      it.cache = {k.get(), v.get(), rule.rolling ? k_raw.get() : nullptr, pos.get(), score.get(), c.cap, {}};
      it.tokens_seen = c.seen - 1;
      it.n_before = n - 1;
      it.rows = 1;
      it.rolling = rule.rolling;
      it.score = rule.score;
      it.cut = 1;
      it.sinks = rule.sinks, it.recent = rule.recent, it.by_score = rule.by_score;
      it.kept = kept;
      // Item 0 is not due (the grid covers every item; it must change nothing), item 1 is.
      ItemDesc idle = it;
      idle.cut = 0;
      DeviceArray<ItemDesc> items(std::vector<ItemDesc>{idle, it}, s.get());
      DeviceArray<int32_t> evicted(size_t(heads) * evicted_per_head, s.get());
      DeviceArray<int> order(2 * size_t(heads) * c.cap, s.get());
      evict(t, items.get(), 2, d, evicted.get(), order.get(), c.cap, rule.rolling ? rope.get() : nullptr, threads,
            s.get());
      const auto pos_after = pos.read();
      const auto score_after = score.read();
      const auto k_after = loaded(k.read(), t), v_after = loaded(v.read(), t), raw_after = loaded(k_raw.read(), t);
      const auto k_before = rounded(c.k, t), v_before = rounded(c.v, t), raw_before = rounded(c.k_raw, t);
      const auto out = evicted.read();
      for (int h = 0; h < heads; ++h) {
        const size_t base = size_t(h) * c.cap;
        const std::span<const int32_t> p(&c.pos[base], size_t(n));
        const std::span<const float> sc(&c.score[base], size_t(n));
        const std::vector<int> expected = select_kept(rule, p, sc);
        ASSERT_EQ(int(expected.size()), kept);
        std::vector<int32_t> gone;
        for (int j = 0, e = 0; j < n; ++j) {
          if (e < kept && expected[size_t(e)] == j) ++e;
          else gone.push_back(p[size_t(j)]);
        }
        ASSERT_EQ(std::vector<int32_t>(out.begin() + h * evicted_per_head, out.begin() + (h + 1) * evicted_per_head), gone)
            << "head " << h;
        for (int dst = 0; dst < kept; ++dst) {
          const int src = expected[size_t(dst)];
          ASSERT_EQ(pos_after[base + size_t(dst)], p[size_t(src)]) << "head " << h << " slot " << dst;
          ASSERT_EQ(score_after[base + size_t(dst)], sc[size_t(src)]);
          for (int i = 0; i < c.hd; ++i) {
            const size_t at = (base + size_t(dst)) * c.hd + size_t(i), from = (base + size_t(src)) * c.hd + size_t(i);
            ASSERT_EQ(v_after[at], v_before[from]);
            if (!rule.rolling) {
              ASSERT_EQ(k_after[at], k_before[from]);
              continue;
            }
            ASSERT_EQ(raw_after[at], raw_before[from]);
            if (src == dst) {
              ASSERT_EQ(k_after[at], k_before[from]);  // not moved: not re-rotated
            } else {
              // Rotated afresh from the pre-RoPE key to the new slot, as the CPU cache does.
              std::vector<float> r(&raw_before[(base + size_t(src)) * c.hd], &raw_before[(base + size_t(src)) * c.hd] + c.hd);
              rope_rotate(r.data(), 1, c.hd, RopeAngles(freqs, double(dst)));
              const float expect = rounded({r[size_t(i)]}, t)[0];
              ASSERT_NEAR(k_after[at], expect, t == DType::F32 ? 1e-6 : 4e-3 * std::fabs(expect) + 1e-6)
                  << "head " << h << " slot " << dst << " dim " << i;
            }
          }
        }
      }
    }
  }
}

}  // namespace

// Head dims 8 (rows of whole 16-byte pieces in f32 and f16) and 6 (one RoPE
// pair at a time); budgets of 15 (one chunk) and 300 (several chunks).
H2O_CUDA_TEST_P(Kernels, CutKeepsWhatSelectKeptKeepsAndCompacts) {
  TestStream s;
  std::mt19937 rng(23);
  for (int hd : {8, 6}) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    check_cuts(s, rng, hd, threads());
  }
}

H2O_CUDA_TEST_P(Kernels, ForcedScoresMatchTheHost) {
  TestStream s;
  std::mt19937 rng(29);
  const int vocab = 700, rows = 6;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> l(size_t(rows) * vocab), ref(size_t(rows) * vocab);
  for (float& x : l) x = normal(rng);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = i % 3 ? l[i] : normal(rng);
  ref[2 * size_t(vocab) + 5] = 40;  // a row whose top-1 differs
  std::vector<int> next;
  for (int r = 0; r < rows; ++r) next.push_back(int(rng() % vocab));
  DeviceArray<float> logits(l, s.get()), ref_logits(ref, s.get());
  DeviceArray<double> log_z(size_t(rows), s.get()), ref_log_z(size_t(rows), s.get()), out(size_t(rows) * 3, s.get());
  row_log_z(logits.get(), rows, vocab, log_z.get(), threads(), s.get());
  row_log_z(ref_logits.get(), rows, vocab, ref_log_z.get(), threads(), s.get());
  std::vector<ForcedRow> fr;
  for (int r = 0; r < rows; ++r) {
    ForcedRow f;
    f.logits_row = r;
    f.target = next[size_t(r)];
    f.ref_logits = r == rows - 1 ? nullptr : ref_logits.get() + size_t(r) * vocab;  // the last row: no reference
    f.ref_logz = ref_log_z.get() + r;
    f.out = out.get() + size_t(r) * 3;
    fr.push_back(f);
  }
  DeviceArray<ForcedRow> desc(fr, s.get());
  forced_scores(logits.get(), log_z.get(), desc.get(), rows, vocab, threads(), s.get());
  const auto got = out.read();
  std::vector<double> lp, rp;
  log_softmax_rows(l.data(), rows, vocab, lp);
  log_softmax_rows(ref.data(), rows, vocab, rp);
  ForcedScores expected;
  score_forced_rows(lp, rp, vocab, next, expected);
  int disagreements = 0;
  for (int r = 0; r < rows; ++r) {
    EXPECT_NEAR(got[size_t(r) * 3], expected.nll[size_t(r)], 1e-12 * std::max(1.0, expected.nll[size_t(r)]));
    if (r == rows - 1) continue;
    EXPECT_NEAR(got[size_t(r) * 3 + 1], expected.kl[size_t(r)], 1e-12);
    EXPECT_EQ(got[size_t(r) * 3 + 2] != 0, expected.agree[size_t(r)] != 0);
    disagreements += expected.agree[size_t(r)] == 0;
  }
  EXPECT_GE(disagreements, 1);
}

H2O_CUDA_TEST_P(Kernels, RmsnormSwigluEmbedMatchTheCpu) {
  TestStream s;
  std::mt19937 rng(37);
  std::normal_distribution<float> normal;
  const int rows = 3, dim = 70, hidden = 50;
  std::vector<float> x(size_t(rows) * dim), w(static_cast<size_t>(dim)), gate_up(size_t(rows) * 2 * hidden);
  for (float& e : x) e = normal(rng);
  for (float& e : w) e = normal(rng);
  for (float& e : gate_up) e = normal(rng);
  DeviceArray<float> dx(x, s.get()), dw(w, s.get()), dgu(gate_up, s.get());
  DeviceArray<float> normed(x.size(), s.get()), swi(size_t(rows) * hidden, s.get()), picked(size_t(2) * dim, s.get());
  DeviceArray<int> map(std::vector<int>{2, 0}, s.get());
  rmsnorm(DType::F32, dx.get(), dw.get(), normed.get(), nullptr, rows, dim, 1e-5f, s.get());
  rmsnorm(DType::F32, dx.get(), dw.get(), picked.get(), map.get(), 2, dim, 1e-5f, s.get());
  swiglu(DType::F32, dgu.get(), swi.get(), rows, hidden, threads(), s.get());
  std::vector<float> expect(x.size());
  cpu::rmsnorm(expect.data(), x.data(), w.data(), rows, dim, 1e-5f);
  const auto got = normed.read(), got_picked = picked.read(), got_swi = swi.read();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], expect[i], 1e-6f * std::fabs(expect[i]) + 1e-7f);
  for (int i = 0; i < dim; ++i) {
    ASSERT_EQ(got_picked[size_t(i)], got[size_t(2 * dim + i)]);
    ASSERT_EQ(got_picked[size_t(dim + i)], got[size_t(i)]);
  }
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < hidden; ++i) {
      const float g = gate_up[size_t(r) * 2 * hidden + i], u = gate_up[size_t(r) * 2 * hidden + hidden + i];
      ASSERT_NEAR(got_swi[size_t(r) * hidden + i], g / (1.0f + std::exp(-g)) * u, 1e-6f);
    }
  // Embedding rows of an f16 table widen exactly.
  std::vector<uint16_t> table(size_t(5) * dim);
  for (auto& h : table) h = f32_to_f16(normal(rng));
  DeviceArray<uint16_t> dt(table, s.get());
  DeviceArray<int> tokens(std::vector<int>{4, 1, 4}, s.get());
  DeviceArray<float> emb(size_t(3) * dim, s.get());
  embed(DType::F16, tokens.get(), dt.get(), emb.get(), 3, dim, threads(), s.get());
  const auto e = emb.read();
  for (int i = 0; i < dim; ++i) {
    ASSERT_EQ(e[size_t(i)], f16_to_f32(table[size_t(4 * dim + i)]));
    ASSERT_EQ(e[size_t(dim + i)], f16_to_f32(table[size_t(dim + i)]));
  }
}

// GPT-NeoX's LayerNorm against double, at a short row (one warp) and a long
// one (warps meeting in the block reduction), on rows whose mean is large
// against their spread (where E[x²] - mean² would cancel), with a row map;
// and the GELU MLP's activation with and without its up bias.
H2O_CUDA_TEST_P(Kernels, LayernormGeluMatchDouble) {
  TestStream s;
  std::mt19937 rng(41);
  std::normal_distribution<float> normal;
  for (const int dim : {70, 1100}) {
    SCOPED_TRACE(dim);
    const int rows = 3;
    std::vector<float> x(size_t(rows) * dim), w(static_cast<size_t>(dim)), b(static_cast<size_t>(dim));
    for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) + (i < size_t(dim) ? 40.0f : 0.0f);
    for (float& e : w) e = normal(rng);
    for (float& e : b) e = normal(rng);
    DeviceArray<float> dx(x, s.get()), dw(w, s.get()), db(b, s.get());
    DeviceArray<float> normed(x.size(), s.get());
    DeviceArray<uint16_t> half(x.size(), s.get());
    DeviceArray<int> map(std::vector<int>{2, 0, 1}, s.get());
    layernorm(DType::F32, dx.get(), dw.get(), db.get(), normed.get(), map.get(), rows, dim, 1e-5f, s.get());
    layernorm(DType::F16, dx.get(), dw.get(), db.get(), half.get(), nullptr, rows, dim, 1e-5f, s.get());
    const auto got = normed.read();
    const auto got_half = half.read();
    for (int r = 0; r < rows; ++r) {
      const float* in = x.data() + size_t(r) * dim;
      double mean = 0, var = 0;
      for (int i = 0; i < dim; ++i) mean += in[i];
      mean /= dim;
      for (int i = 0; i < dim; ++i) var += (in[i] - mean) * (in[i] - mean);
      const double scale = 1.0 / std::sqrt(var / dim + 1e-5);
      const int mapped = r == 0 ? 1 : r == 1 ? 2 : 0;  // output row of source row r under the map {2, 0, 1}
      for (int i = 0; i < dim; ++i) {
        const double expect = (in[i] - mean) * scale * w[size_t(i)] + b[size_t(i)];
        ASSERT_NEAR(got[size_t(mapped) * dim + i], expect, 2e-5 * (std::fabs(expect) + 1)) << "row " << r;
        ASSERT_NEAR(f16_to_f32(got_half[size_t(r) * dim + i]), expect, 1e-3 * (std::fabs(expect) + 1)) << "row " << r;
      }
    }
  }
  const int rows = 2, hidden = 50;
  std::vector<float> up(size_t(rows) * hidden), bias(static_cast<size_t>(hidden));
  for (float& e : up) e = 2 * normal(rng);
  for (float& e : bias) e = normal(rng);
  DeviceArray<float> dup(up, s.get()), dbias(bias, s.get()), act(up.size(), s.get()), plain(up.size(), s.get());
  gelu(DType::F32, dup.get(), dbias.get(), act.get(), rows, hidden, threads(), s.get());
  gelu(DType::F32, dup.get(), nullptr, plain.get(), rows, hidden, threads(), s.get());
  const auto got = act.read(), got_plain = plain.read();
  const auto exact = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  for (size_t e = 0; e < up.size(); ++e) {
    ASSERT_NEAR(got[e], exact(double(up[e]) + bias[e % size_t(hidden)]), 1e-6);
    ASSERT_NEAR(got_plain[e], exact(up[e]), 1e-6);
  }
}

H2O_CUDA_INSTANTIATE(BlockSizes, Kernels, ::testing::Values(32, 128),
                         [](const auto& info) { return "Threads" + std::to_string(info.param); });

namespace {

// x or w in a storage type: the f32 values after rounding (what the kernel
// reads) and their bits on the device.
struct Stored {
  std::vector<double> value;
  std::vector<uint16_t> half;  // f16 / bf16 bits
  std::vector<float> single;   // f32
};

Stored stored_values(std::mt19937& rng, DType type, size_t n) {
  std::normal_distribution<float> normal;
  Stored s;
  for (size_t i = 0; i < n; ++i) {
    const float v = normal(rng);
    if (type == DType::F32) {
      s.single.push_back(v);
      s.value.push_back(v);
    } else {
      const uint16_t h = type == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
      s.half.push_back(h);
      s.value.push_back(type == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h));
    }
  }
  return s;
}

// A device copy of `s`, starting `shift` elements into its buffer (a shift
// leaves the 16-byte loads' alignment and takes the one-element path).
struct StoredOnDevice {
  std::unique_ptr<DeviceArray<float>> f32;
  std::unique_ptr<DeviceArray<uint16_t>> f16;
  const void* at = nullptr;
  StoredOnDevice(const Stored& s, DType type, int shift, gpu::Stream stream) {
    if (type == DType::F32) {
      std::vector<float> v(size_t(shift), 0.0f);
      v.insert(v.end(), s.single.begin(), s.single.end());
      f32 = std::make_unique<DeviceArray<float>>(v, stream);
      at = f32->get() + shift;
    } else {
      std::vector<uint16_t> v(size_t(shift), 0);
      v.insert(v.end(), s.half.begin(), s.half.end());
      f16 = std::make_unique<DeviceArray<uint16_t>>(v, stream);
      at = f16->get() + shift;
    }
  }
};

// sum_i w[o][i] x[r][i] in float64 (+ `start`), and sum |w x| + |start|: the
// scale of the f32 summation's error.
struct Reference {
  double sum, magnitude;
};
Reference reference_dot(const std::vector<double>& w, const std::vector<double>& x, int in, int o, int r,
                        double start) {
  Reference ref{start, std::fabs(start)};
  for (int i = 0; i < in; ++i) {
    const double p = w[size_t(o) * in + i] * x[size_t(r) * in + i];
    ref.sum += p;
    ref.magnitude += std::fabs(p);
  }
  return ref;
}

}  // namespace

// The decode-step projections (Blas::gemm up to kMatvecMaxRows rows) against
// a float64 sum of the same stored values, for 1..8 rows, every storage type,
// with and without the residual add. Shapes: `in` not a multiple of the
// 16-byte vector (172: stories260K's hidden in f16), odd `out`, rows split
// over several warps, a misaligned x. Products of f16 or bf16 values are
// exact in f32, so for every type the error is the f32 summation's: bounded
// by (terms summed in a row by one lane + the tree's depth) x 2^-24 x sum |w x|.
H2O_CUDA_TEST(Matvec, MatchesFloat64ForOneToEightRows) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(41);
  struct Shape {
    int in, out, x_shift;
  };
  const Shape shapes[] = {{64, 37, 0}, {172, 33, 0}, {300, 19, 0}, {1000, 65, 0}, {128, 21, 1}};
  for (DType type : {DType::F32, DType::F16, DType::BF16})
    for (const Shape& sh : shapes) {
      const int rows_max = kMatvecMaxRows;
      const Stored w = stored_values(rng, type, size_t(sh.out) * sh.in);
      const Stored x = stored_values(rng, type, size_t(rows_max) * sh.in);
      std::vector<float> start(size_t(rows_max + 1) * sh.out);  // one guard row past the last
      for (float& v : start) v = float(rng() % 1000) / 64.0f - 7.0f;
      const StoredOnDevice dw(w, type, 0, s.get()), dx(x, type, sh.x_shift, s.get());
      for (int rows = 1; rows <= rows_max; ++rows)
        for (bool accumulate : {false, true}) {
          DeviceArray<float> out(start, s.get());
          matvec(type, out.get(), dx.at, dw.at, rows, sh.in, sh.out, accumulate, s.get());
          const auto got = out.read();
          for (int r = 0; r < rows; ++r)
            for (int o = 0; o < sh.out; ++o) {
              const size_t e = size_t(r) * sh.out + o;
              const Reference ref = reference_dot(w.value, x.value, sh.in, o, r, accumulate ? start[e] : 0.0);
              const double bound = (sh.in / 32 + 12) * std::ldexp(1.0, -24) * ref.magnitude;
              ASSERT_NEAR(got[e], ref.sum, bound) << dtype_name(type) << " in " << sh.in << " out " << sh.out << " rows "
                                              << rows << (accumulate ? " accumulate" : "") << " row " << r << " o " << o;
            }
          for (size_t e = size_t(rows) * sh.out; e < got.size(); ++e) ASSERT_EQ(got[e], start[e]) << "wrote past the rows";
        }
      // Each row's sum is the same bits whatever else is in the call, and run to run.
      DeviceArray<float> all(size_t(rows_max) * sh.out, s.get()), again(size_t(rows_max) * sh.out, s.get());
      matvec(type, all.get(), dx.at, dw.at, rows_max, sh.in, sh.out, false, s.get());
      matvec(type, again.get(), dx.at, dw.at, rows_max, sh.in, sh.out, false, s.get());
      const auto got_all = all.read(), got_again = again.read();
      for (int r = 0; r < rows_max; ++r) {
        DeviceArray<float> one(static_cast<size_t>(sh.out), s.get());
        const size_t x_offset = size_t(r) * sh.in * size_t(dtype_size(type));
        matvec(type, one.get(), static_cast<const char*>(dx.at) + x_offset, dw.at, 1, sh.in, sh.out, false, s.get());
        const auto got_one = one.read();
        for (int o = 0; o < sh.out; ++o) {
          const size_t e = size_t(r) * sh.out + o;
          ASSERT_EQ(got_all[e], got_again[e]) << "not deterministic: " << dtype_name(type) << " in " << sh.in;
          ASSERT_EQ(got_all[e], got_one[size_t(o)]) << "row " << r << " alone differs: " << dtype_name(type) << " in " << sh.in;
        }
      }
    }
}

// Blas::gemm by blas.h's rule, captured into a graph as a decode step is: up
// to kMatvecMaxRows rows the matvec kernel (the bits of a direct launch, the
// residual added), beyond it cuBLAS (the CPU matmul in the emulation). Each
// replay reads the inputs as they are when it runs: nothing was allocated or
// synchronised inside the capture.
H2O_CUDA_TEST(Matvec, BlasPicksByRowsAndReplaysFromAGraph) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(43);
  const int in = 96, out = 40, few = 4, many = kMatvecMaxRows + 4;
  const Stored w = stored_values(rng, DType::F32, size_t(out) * in);
  const StoredOnDevice dw(w, DType::F32, 0, s.get());
  DeviceArray<float> x(size_t(many) * in, s.get()), few_out(size_t(few) * out, s.get()),
      many_out(size_t(many) * out, s.get()), direct(size_t(few) * out, s.get());
  Blas blas(s.get(), kMatvecMaxRows);
  gpu::begin_capture(s.get());
  blas.gemm(few_out.get(), x.get(), dw.at, DType::F32, few, in, out, true);
  blas.gemm(many_out.get(), x.get(), dw.at, DType::F32, many, in, out, false);
  const std::unique_ptr<gpu::GraphImpl, void (*)(gpu::Graph)> graph(gpu::end_capture(s.get()), gpu::destroy_graph);
  for (int round = 0; round < 2; ++round) {
    const Stored xs = stored_values(rng, DType::F32, size_t(many) * in);
    const std::vector<float> start(size_t(few) * out, float(round) + 0.5f);
    gpu::copy_to_device(x.get(), xs.single.data(), xs.single.size() * sizeof(float), s.get());
    gpu::copy_to_device(few_out.get(), start.data(), start.size() * sizeof(float), s.get());
    gpu::copy_to_device(direct.get(), start.data(), start.size() * sizeof(float), s.get());
    gpu::launch_graph(graph.get(), s.get());
    matvec(DType::F32, direct.get(), x.get(), dw.at, few, in, out, true, s.get());
    const auto got_few = few_out.read(), got_direct = direct.read(), got_many = many_out.read();
    for (size_t e = 0; e < got_few.size(); ++e) ASSERT_EQ(got_few[e], got_direct[e]) << "round " << round;
    for (int r = 0; r < many; ++r)
      for (int o = 0; o < out; ++o) {
        const Reference ref = reference_dot(w.value, xs.value, in, o, r, r < few ? start[0] : 0.0);
        const double bound = (in + 12) * std::ldexp(1.0, -24) * ref.magnitude;  // any f32 summation order
        if (r < few) {
          ASSERT_NEAR(got_few[size_t(r) * out + o], ref.sum, bound) << "round " << round;
        }
        ASSERT_NEAR(got_many[size_t(r) * out + o], r < few ? ref.sum - start[0] : ref.sum, bound) << "round " << round;
      }
  }
}
