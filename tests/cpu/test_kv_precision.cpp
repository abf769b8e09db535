// KV precision (SEMANTICS.md, "KV precision"): the quantization arithmetic
// against the spec's own words, the quantized head's bookkeeping (flush,
// cut, bytes), and whole forward passes at each precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/kv_quant.h"
#include "core/cpu/low_bit_head.h"
#include "core/model/dtype.h"
#include "core/model/model.h"
#include "core/policy/policy.h"
#include "core/runtime/backend.h"

using namespace h2o;

namespace {

float f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// The spec, read literally, for one group: m, s, codes, and what is read back.
struct SpecGroup {
  float m, s;
  std::vector<int> codes;
};
SpecGroup spec_group(const std::vector<float>& x, int bits) {
  float lo = x[0], hi = x[0];
  for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  SpecGroup g{f16(lo), 0, {}};
  g.s = f16((hi - g.m) / float((1 << bits) - 1));
  for (float v : x) {
    int code = 0;
    if (g.s != 0) code = int(std::clamp(std::nearbyint((v - g.m) / g.s), 0.0f, float((1 << bits) - 1)));
    g.codes.push_back(code);
  }
  return g;
}

std::vector<float> random_rows(int n, uint32_t seed, float scale = 2.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> out(static_cast<size_t>(n));
  for (float& v : out) v = normal(rng);
  return out;
}

}  // namespace

TEST(KvQuant, ScaleCodeAndReadBackFollowTheSpec) {
  const kvq::Scale sc = kvq::HostMath::scale_of(-1.0f, 2.0f, 2);
  EXPECT_EQ(f16_to_f32(sc.m), -1.0f);
  EXPECT_EQ(f16_to_f32(sc.s), 1.0f);
  EXPECT_EQ(kvq::HostMath::code_of(0.5f, sc, 2), 2);   // 1.5 rounds half to even: 2
  EXPECT_EQ(kvq::HostMath::code_of(-0.5f, sc, 2), 0);  // 0.5 rounds half to even: 0
  EXPECT_EQ(kvq::HostMath::code_of(1.5f, sc, 2), 2);   // 2.5: 2
  EXPECT_EQ(kvq::HostMath::code_of(9.0f, sc, 2), 3);   // clamped
  EXPECT_EQ(kvq::HostMath::code_of(-9.0f, sc, 2), 0);
  EXPECT_EQ(kvq::HostMath::read_back(3, sc), 2.0f);
  // m and s are rounded to f16: 0.1 is not one.
  const kvq::Scale odd = kvq::HostMath::scale_of(0.1f, 0.7f, 4);
  EXPECT_EQ(f16_to_f32(odd.m), f16(0.1f));
  EXPECT_EQ(f16_to_f32(odd.s), f16((0.7f - f16(0.1f)) / 15.0f));
  // A constant group has s = 0 and every code 0.
  const kvq::Scale flat = kvq::HostMath::scale_of(0.25f, 0.25f, 4);
  EXPECT_EQ(flat.s, 0);
  EXPECT_EQ(kvq::HostMath::code_of(0.25f, flat, 4), 0);
  EXPECT_EQ(kvq::HostMath::read_back(0, flat), 0.25f);
}

TEST(KvQuant, PlanarPackingRoundTripsAndPutsChannelsWhereTheLayoutSays) {
  for (int bits : {8, 4, 2}) {
    const int n = 64;
    std::vector<uint8_t> codes(n), back(n), packed(size_t(kvq::row_bytes(n, bits)));
    for (int c = 0; c < n; ++c) codes[size_t(c)] = uint8_t((c * 7 + 3) % (1 << bits));
    kvq::pack_row(codes.data(), n, bits, packed.data());
    kvq::unpack_row(packed.data(), n, bits, back.data());
    EXPECT_EQ(back, codes) << bits;
    const int per = 8 / bits;
    EXPECT_EQ(packed[0] & ((1 << bits) - 1), codes[0]) << bits;
    if (per > 1) {
      EXPECT_EQ((packed[0] >> bits) & ((1 << bits) - 1), codes[size_t(n / per)]) << bits;
    }
  }
}

TEST(KvQuant, KeyGroupsPerChannelAndValuesPerRunMatchTheSpec) {
  const int n = 32, tokens = 32;
  for (int bits : {8, 4, 2}) {
    std::vector<float> rows = random_rows(tokens * n, 5u + bits);
    for (float& v : rows) v = f16(v);  // keys are quantized as stored: f16
    std::vector<kvq::Scale> scales(n);
    const int rb = kvq::row_bytes(n, bits);
    std::vector<uint8_t> packed(size_t(tokens) * rb);
    kvq::quantize_key_group(rows.data(), tokens, n, bits, scales.data(), packed.data(), rb);
    std::vector<float> m(n), s(n), out(n);
    kvq::widen_scales(scales.data(), n, 1, m.data(), s.data());
    for (int c = 0; c < n; ++c) {
      std::vector<float> channel;
      for (int t = 0; t < tokens; ++t) channel.push_back(rows[size_t(t) * n + c]);
      const SpecGroup g = spec_group(channel, bits);
      ASSERT_EQ(m[size_t(c)], g.m) << bits << " channel " << c;
      ASSERT_EQ(s[size_t(c)], g.s) << bits << " channel " << c;
      for (int t = 0; t < tokens; ++t) {
        kvq::read_row(&packed[size_t(t) * rb], n, bits, m.data(), s.data(), out.data());
        ASSERT_EQ(out[size_t(c)], std::fma(float(g.codes[size_t(t)]), g.s, g.m)) << bits << " t " << t << " c " << c;
      }
    }
    // A value row: per run of 8 channels.
    const int group = 8;
    std::vector<kvq::Scale> runs(n / group);
    kvq::quantize_value_row(rows.data(), n, group, bits, runs.data(), packed.data());
    kvq::read_value_row(packed.data(), n, group, bits, runs.data(), out.data());
    for (int r = 0; r < n / group; ++r) {
      const SpecGroup g = spec_group(std::vector<float>(rows.begin() + r * group, rows.begin() + (r + 1) * group), bits);
      for (int c = 0; c < group; ++c)
        ASSERT_EQ(out[size_t(r * group + c)], std::fma(float(g.codes[size_t(c)]), g.s, g.m)) << bits << " run " << r;
    }
  }
}

// low_bit_layout.h's rules, which both caches follow: the flush (SEMANTICS'
// "while the residual holds R + G or more, its oldest G go"), and the step's
// most, which must hold whatever a flush leaves.
TEST(LowBitLayout, TheFlushRuleAndTheStepsMostAreWhatTheSpecSays) {
  for (const int G : {1, 8, 32})
    for (const int R : {G, 2 * G})
      for (const int bits : {16, 4}) {
        const kvq::Shape shape{64, bits, bits, G, R};
        for (int residual = 0; residual < 4 * R + 3 * G; ++residual) {
          int groups = 0;
          for (int left = residual; bits < 16 && left >= R + G; left -= G) ++groups;
          ASSERT_EQ(shape.groups_to_flush(residual), groups) << "G " << G << " R " << R << " residual " << residual;
          const kvq::Runs before{3, 5 * G, residual, 5};
          const kvq::Runs after = shape.after_flush(before, groups);
          EXPECT_EQ(after.size(), before.size());
          EXPECT_EQ(after.groups, 5 + groups);
          if (bits < 16) {
            EXPECT_LT(after.residual, R + G);
          }
          // A step appending `rows` never needs more than most_after_step of any run.
          for (const int rows : {0, 1, G + 1}) {
            const kvq::Runs most = shape.most_after_step(before, rows);
            kvq::Runs grown = before;
            grown.residual += rows;
            const kvq::Runs flushed = shape.after_flush(grown, shape.groups_to_flush(grown.residual));
            EXPECT_LE(grown.f16_tokens(), most.f16_tokens());
            EXPECT_LE(flushed.quantized, most.quantized);
            EXPECT_LE(flushed.groups, most.groups);
            EXPECT_GE(most.groups, 1);
          }
        }
      }
}

TEST(LowBitHead, FlushesWholeGroupsKeepsTheResidualAndShrinksGroupsOnCuts) {
  KvPrecision kv{4, 2, 8, 16};
  const int hd = 16, sinks = 2;
  LowBitHead head(kv, hd, sinks, false);
  head.grow(head.plan(64, 1 << 20));
  const std::vector<float> keys = random_rows(64 * hd, 11), values = random_rows(64 * hd, 12);
  for (int t = 0; t < 40; ++t) head.append(&keys[size_t(t) * hd], nullptr, &values[size_t(t) * hd], t);
  head.flush();
  // 38 past the sinks: flushed while the residual holds R + G = 24 or more, leaving 16..23.
  EXPECT_EQ(head.size(), 40);
  EXPECT_EQ(head.quantized(), 16);
  EXPECT_EQ(head.groups(), 2);
  // Sinks and residual read back as f16; a quantized key as its group's numbers say.
  std::vector<float> out(size_t(40) * hd);
  head.read_keys(0, 40, out.data());
  EXPECT_EQ(out[0], f16(keys[0]));
  EXPECT_EQ(out[size_t(39) * hd + 3], f16(keys[size_t(39) * hd + 3]));
  std::vector<float> group(size_t(8) * hd);
  for (int i = 0; i < 8 * hd; ++i) group[size_t(i)] = f16(keys[size_t(2 * hd + i)]);
  for (int c = 0; c < hd; ++c) {
    std::vector<float> channel;
    for (int t = 0; t < 8; ++t) channel.push_back(group[size_t(t) * hd + c]);
    const SpecGroup g = spec_group(channel, 4);
    for (int t = 0; t < 8; ++t)
      ASSERT_EQ(out[size_t(2 + t) * hd + c], std::fma(float(g.codes[size_t(t)]), g.s, g.m)) << t << "," << c;
  }
  // Bytes: 24 f16 tokens, 16 quantized ones (4 + 2 bits), 2 key groups and 16 x 2 value runs of two f16 numbers.
  EXPECT_EQ(head.live_bytes(), 24 * hd * 4 + 16 * hd * 6 / 8 + 2 * hd * 4 + 16 * 2 * 4);

  // Evict one member of the first group and all of the second: the first keeps its numbers.
  std::vector<float> before(size_t(40) * hd);
  head.read_keys(0, 40, before.data());
  std::vector<int> kept;
  for (int s = 0; s < 40; ++s)
    if (s != 3 && (s < 10 || s >= 18)) kept.push_back(s);
  head.cut(kept);
  EXPECT_EQ(head.size(), int(kept.size()));
  EXPECT_EQ(head.groups(), 1);
  EXPECT_EQ(head.quantized(), 7);
  std::vector<float> after(kept.size() * hd);
  head.read_keys(0, int(kept.size()), after.data());
  for (size_t i = 0; i < kept.size(); ++i)
    for (int c = 0; c < hd; ++c) ASSERT_EQ(after[i * hd + c], before[size_t(kept[i]) * hd + c]) << i;
}

TEST(KvPrecisionFlags, ParseLabelsValidateAndDescribe) {
  EXPECT_EQ(parse_kv_bits("4").label(), "4bit");
  EXPECT_EQ(parse_kv_bits("4,2").label(), "k4v2");
  EXPECT_EQ(parse_kv_label("2bit", "--policies").label(), "2bit");
  EXPECT_EQ(parse_kv_label("k8v4", "--policies").label(), "k8v4");
  EXPECT_EQ(parse_kv_label("f16", "--policies").label(), "16bit");
  EXPECT_THROW(parse_kv_bits("3"), Error);
  EXPECT_THROW(parse_kv_bits("4,"), Error);
  EXPECT_THROW(parse_kv_label("3bit", "--policies"), Error);
  const PolicyEntry e = parse_policy_entry("h2o@2bit", "--policies");
  EXPECT_EQ(e.kind, "h2o");
  ASSERT_TRUE(e.kv);
  PolicySettings s;
  s.budget = 64;
  const PolicyConfig p = make_policy(e, s);
  EXPECT_EQ(p.describe(), "h2o(sinks=4,heavy=30,recent=30,kv=2bit)");  // G and R wait for the model
  EXPECT_EQ(policy_from_json(policy_json(p)), p);
  PolicyConfig shaped = p;
  shaped.shape_kv(32);
  EXPECT_EQ(shaped.describe(), "h2o(sinks=4,heavy=30,recent=30,kv=2bit,kv_group=8,kv_residual=8)");
  EXPECT_EQ(policy_from_json(policy_json(shaped)), shaped);
  EXPECT_EQ(policy_from_json(policy_json(make_policy("h2o", s))).kv, KvPrecision{});
  s.rolling = true;
  EXPECT_THROW(make_policy(e, s), Error);  // quantized keys cannot be re-rotated
  s.kv = parse_kv_bits("16");
  EXPECT_NO_THROW(make_policy("h2o", s));  // f16 can
  KvPrecision bad{4, 4, 32, 48};
  EXPECT_THROW(bad.validate(false), Error);
  KvPrecision fine{4, 4, 32, 64};
  EXPECT_THROW(fine.validate_for(48), Error);
}

// SEMANTICS' "defaults that quantize at every budget", on its own examples.
TEST(KvPrecisionDefaults, GroupAndResidualFitTheHeadAndLeaveHalfABoundedCacheToQuantize) {
  const KvPrecision two_bit = parse_kv_bits("2");
  const auto shaped = [&](int head_dim, int budget, int sinks) {
    const KvPrecision k = two_bit.shaped_for(head_dim, budget, sinks);
    EXPECT_TRUE(k.shape_given);
    return std::pair{k.group, k.residual};
  };
  EXPECT_EQ(shaped(128, 0, 4), std::pair(32, 64));    // KIVI's at head_dim 128, unbounded (the full cache)
  EXPECT_EQ(shaped(128, 1024, 4), std::pair(32, 64));  // 4 + 64 + 32 <= 512
  EXPECT_EQ(shaped(48, 0, 4), std::pair(16, 32));     // stories15M: 32 does not divide 48
  EXPECT_EQ(shaped(32, 64, 4), std::pair(8, 8));      // kjv-1M at budget 64: 32/64 and 16/16 leave less than half
  EXPECT_EQ(shaped(32, 96, 4), std::pair(16, 16));    // 4 + 16 + 16 <= 48
  EXPECT_EQ(shaped(64, 16, 4), std::pair(8, 8));      // G stops at 8 however small the budget
  // Given values are kept; 16 bits and the backend's own type have no groups to shape.
  KvPrecision given = two_bit;
  given.group = 16, given.residual = 48, given.shape_given = true;
  EXPECT_EQ(given.shaped_for(32, 64, 4), given);
  const KvPrecision f16 = parse_kv_bits("16");
  EXPECT_EQ(f16.shaped_for(32, 64, 4), f16);
  EXPECT_EQ(KvPrecision{}.shaped_for(32, 64, 4), KvPrecision{});
  // A head no such G divides is left for validate_for to refuse.
  EXPECT_EQ(two_bit.shaped_for(36, 64, 4).group, two_bit.group);
}

// The case: at the demo's default budget 64 (kjv-1M's head of 32; test-256's
// 64 shapes the same), the 2-bit pane kept every token in f16 (G 32, R 64); shaped,
// most of its tokens are codes.
TEST(KvPrecisionDefaults, ATwoBitPaneAtTheDemosBudgetQuantizesMostOfItsCache) {
  SyntheticSpec spec;
  spec.shape = "test-256";
  const auto model = make_synthetic(spec);
  ASSERT_EQ(model->config.head_dim() % 32, 0);
  PolicySettings s;
  s.budget = 64;
  s.kv = parse_kv_bits("2");
  const PolicyConfig unshaped = make_policy("h2o", s);  // G 32, R 64: the struct's values
  PolicyConfig quantized = unshaped;
  quantized.shape_kv(model->config.head_dim());
  EXPECT_EQ(quantized.kv.group, 8);
  s.kv = parse_kv_bits("16");
  const PolicyConfig f16 = make_policy("h2o", s);
  auto backend = make_cpu_backend(model, 1);
  auto a = backend->new_cache(quantized), b = backend->new_cache(f16), c = backend->new_cache(unshaped);
  std::vector<int> prompt;
  for (int i = 0; i < 100; ++i) prompt.push_back(1 + (i * 37) % 200);
  std::vector<float> logits;
  for (auto* cache : {a.get(), b.get(), c.get()}) {
    ForwardItem item;
    item.cache = cache;
    item.tokens = prompt;
    item.logits = &logits;
    backend->forward(std::span<ForwardItem>(&item, 1));
  }
  // Unshaped, the 64 tokens are the 4 sinks and a residual of 64..95: all f16, the f16 cache's bytes exactly.
  EXPECT_EQ(c->live_bytes(), b->live_bytes());
  // Shaped (G 8, R 8), all but the sinks and 8..15 newest are 2-bit codes; a group of 8 adds two f16
  // numbers per 8 values (4 bits an element), so the bytes are a little over half.
  EXPECT_LT(double(a->live_bytes()), 0.6 * double(b->live_bytes())) << a->live_bytes() << " vs " << b->live_bytes();
  // And it says how many: all but the 4 sinks and the 8..15 newest (f16) of the 64 are codes;
  // the unshaped and f16 caches hold none.
  EXPECT_EQ(a->max_size(), 64);
  EXPECT_GE(a->quantized_tokens(), 64 - 4 - 15);
  EXPECT_LE(a->quantized_tokens(), 64 - 4 - 8);
  EXPECT_EQ(b->quantized_tokens(), 0);
  EXPECT_EQ(c->quantized_tokens(), 0);
}

namespace {

// Last-row logits of a fixed prompt and `steps` fixed tokens after it, so
// every precision sees the same inputs.
std::vector<std::vector<float>> run(Backend& backend, const PolicyConfig& policy, int steps) {
  auto cache = backend.new_cache(policy);
  std::vector<std::vector<float>> out;
  std::vector<int> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(1 + (i * 37) % 500);
  std::vector<float> logits;
  ForwardItem item;
  item.cache = cache.get();
  item.tokens = prompt;
  item.logits = &logits;
  backend.forward(std::span<ForwardItem>(&item, 1));
  for (int s = 0; s < steps; ++s) {
    out.push_back(logits);
    const int tok[1] = {1 + (s * 53) % 500};
    item.tokens = tok;
    backend.forward(std::span<ForwardItem>(&item, 1));
  }
  return out;
}

double max_abs_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) d = std::max(d, double(std::abs(a[i][j] - b[i][j])));
  return d;
}

}  // namespace

TEST(KvPrecisionForward, EachPrecisionStaysNearTheF32CacheAndFewerBitsDriftMore) {
  SyntheticSpec spec;
  spec.shape = "stories15M";  // head_dim 48: groups of 16
  spec.vocab_size = 512;
  const auto model = make_synthetic(spec);
  auto backend = make_cpu_backend(model, 2);
  PolicySettings s;
  s.budget = 48;
  s.kv.group = 16;
  s.kv.residual = 16;
  const auto f32 = run(*backend, make_policy("h2o", s), 60);
  double last = 0;
  const std::map<std::string, double> bound = {{"16", 0.01}, {"8", 0.1}, {"4", 1.5}, {"2", 5.0}};
  for (const char* bits : {"16", "8", "4", "2"}) {
    PolicySettings q = s;
    const KvPrecision b = parse_kv_bits(bits);
    q.kv.key_bits = b.key_bits, q.kv.value_bits = b.value_bits;
    const double d = max_abs_diff(f32, run(*backend, make_policy("h2o", q), 60));
    EXPECT_GE(d, last) << bits;
    std::printf("%s bits: max |logit - f32 cache's| %.5f\n", bits, d);
    EXPECT_LT(d, bound.at(bits)) << bits;
    EXPECT_GT(d, 0.0) << bits;
    last = d;
  }
}

// Attention straight from codes equals attention over the read-back rows (up to float rounding).
// Rows' worth of scores and values straight from the codes equal the
// arithmetic over the rows read back: whole blocks of eight rows and a partial
// one, planes of whole eights (64 channels) and not (48 channels at 2 bits),
// key groups per channel and value runs of 16.
TEST(KvQuant, ScoresAndValuesFromCodesEqualTheReadBackRows) {
  const int rows = 11, group = 16;
  for (int n : {64, 48})
    for (int bits : {8, 4, 2}) {
      const int bytes = kvq::row_bytes(n, bits), runs = n / group;
      const std::vector<float> keys = random_rows(rows * n, 40u + bits), values = random_rows(rows * n, 60u + bits);
      const std::vector<float> q = random_rows(n, 50u + bits), probs = random_rows(rows, 70u + bits, 0.5f);
      // Keys: one group per channel over the rows.
      std::vector<kvq::Scale> key_scales(static_cast<size_t>(n)), value_scales(static_cast<size_t>(rows * runs));
      std::vector<uint8_t> key_codes(size_t(rows) * bytes), value_codes(size_t(rows) * bytes);
      kvq::quantize_key_group(keys.data(), rows, n, bits, key_scales.data(), key_codes.data(), bytes);
      std::vector<float> m(n), s(n), qs(n), back(size_t(rows) * n);
      kvq::widen_scales(key_scales.data(), n, 1, m.data(), s.data());
      double qm = 0;
      for (int c = 0; c < n; ++c) qs[size_t(c)] = q[size_t(c)] * s[size_t(c)], qm += double(q[size_t(c)]) * m[size_t(c)];
      std::vector<float> scores(rows);
      kvq::dot_code_rows(key_codes.data(), bytes, rows, n, bits, qs.data(), float(qm), scores.data());
      for (int i = 0; i < rows; ++i) {
        kvq::read_row(&key_codes[size_t(i) * bytes], n, bits, m.data(), s.data(), &back[size_t(i) * n]);
        double want = 0;
        for (int c = 0; c < n; ++c) want += double(q[size_t(c)]) * back[size_t(i) * n + c];
        EXPECT_NEAR(scores[size_t(i)], want, 1e-4 * (1 + std::abs(want))) << n << " " << bits << " row " << i;
      }
      // Values: per row and run of `group` channels; out starts at 1.
      for (int i = 0; i < rows; ++i)
        kvq::quantize_value_row(&values[size_t(i) * n], n, group, bits, &value_scales[size_t(i) * runs],
                                &value_codes[size_t(i) * bytes]);
      std::vector<float> out(n, 1.0f);
      std::vector<double> want(n, 1.0);
      kvq::add_value_rows(value_codes.data(), bytes, rows, n, group, bits, value_scales.data(), probs.data(),
                          out.data());
      for (int i = 0; i < rows; ++i) {
        kvq::read_value_row(&value_codes[size_t(i) * bytes], n, group, bits, &value_scales[size_t(i) * runs],
                            &back[size_t(i) * n]);
        for (int c = 0; c < n; ++c) want[size_t(c)] += double(probs[size_t(i)]) * back[size_t(i) * n + c];
      }
      for (int c = 0; c < n; ++c) EXPECT_NEAR(out[size_t(c)], want[size_t(c)], 1e-4) << n << " " << bits << " " << c;
    }
}
