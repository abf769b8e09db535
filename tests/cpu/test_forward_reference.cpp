// The CPU backend against an independent float64 forward pass written the
// slow way: keys stored before RoPE and every cached key rotated to its
// position on every step (SEMANTICS.md's definition of rolling positions).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/cpu/cpu_backend.h"
#include "core/model/model.h"
#include "core/policy/kept_set.h"
#include "core/policy/policy.h"

using namespace h2o;

namespace {

struct RefEntry {
  int32_t pos;
  std::vector<double> k_raw, v;
  double score = 0;
};

class ReferenceModel {
 public:
  ReferenceModel(const Model& m, const PolicyConfig& p) : m_(m), c_(m.config), p_(p) {}

  std::vector<double> step(int token) {
    const int dim = c_.dim, hd = c_.head_dim(), group = c_.group_size();
    std::vector<double> x(dim);
    for (int i = 0; i < dim; ++i) x[i] = m_.weights.token_embedding.f32()[size_t(token) * dim + i];
    for (int l = 0; l < c_.n_layers; ++l) {
      const LayerWeights& w = m_.weights.layers[l];
      auto xb = norm(x, w.attn_norm, w.attn_norm_bias);
      auto q = matvec(w.wq, xb), k = matvec(w.wk, xb), v = matvec(w.wv, xb);
      if (c_.attention_bias) add(q, w.bq), add(k, w.bk), add(v, w.bv);
      std::vector<double> att_out(size_t(c_.n_heads) * hd, 0.0);
      for (int g = 0; g < c_.n_kv_heads; ++g) {
        auto& cache = caches_[{l, g}];
        cache.push_back({t_, {k.begin() + g * hd, k.begin() + (g + 1) * hd}, {v.begin() + g * hd, v.begin() + (g + 1) * hd}});
        const int n = int(cache.size());
        // TOVA scores by the current query alone (one token per step here).
        if (p_.rule().score == ScoreKind::Current)
          for (auto& e : cache) e.score = 0;
        for (int qh = g * group; qh < (g + 1) * group; ++qh) {
          std::vector<double> qv(q.begin() + qh * hd, q.begin() + (qh + 1) * hd);
          rotate(qv, p_.rolling ? n - 1 : t_);
          std::vector<double> s(n);
          double max = -1e300;
          for (int j = 0; j < n; ++j) {
            auto kj = cache[j].k_raw;
            rotate(kj, p_.rolling ? j : cache[j].pos);
            double d = 0;
            for (int i = 0; i < hd; ++i) d += qv[i] * kj[i];
            s[j] = d / std::sqrt(double(hd));
            max = std::max(max, s[j]);
          }
          double sum = 0;
          for (auto& e : s) sum += e = std::exp(e - max);
          for (int j = 0; j < n; ++j) {
            const double pj = s[j] / sum;
            cache[j].score += pj;
            for (int i = 0; i < hd; ++i) att_out[size_t(qh) * hd + i] += pj * cache[j].v[i];
          }
        }
        std::vector<int32_t> pos;
        std::vector<float> score;
        for (auto& e : cache) pos.push_back(e.pos), score.push_back(float(e.score));
        std::vector<RefEntry> kept;
        for (int j : select_kept(p_.rule(), pos, score)) kept.push_back(cache[j]);
        cache = std::move(kept);
      }
      auto o = matvec(w.wo, att_out);
      if (c_.output_bias) add(o, w.bo);
      if (c_.parallel_residual) {  // both blocks read the same x
        const auto down = ffn(w, norm(x, w.ffn_norm, w.ffn_norm_bias));
        for (int i = 0; i < dim; ++i) x[i] += o[i] + down[i];
      } else {
        for (int i = 0; i < dim; ++i) x[i] += o[i];
        const auto down = ffn(w, norm(x, w.ffn_norm, w.ffn_norm_bias));
        for (int i = 0; i < dim; ++i) x[i] += down[i];
      }
    }
    ++t_;
    return matvec(m_.weights.classifier, norm(x, m_.weights.final_norm, m_.weights.final_norm_bias));
  }

  int cache_size(int l, int g) { return int(caches_[{l, g}].size()); }

 private:
  static void add(std::vector<double>& x, const Tensor& bias) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += bias.f32()[i];
  }
  std::vector<double> matvec(const Tensor& w, const std::vector<double>& x) const {
    std::vector<double> out(w.rows, 0.0);
    for (int64_t o = 0; o < w.rows; ++o)
      for (int64_t i = 0; i < w.cols; ++i) out[o] += double(w.f32()[o * w.cols + i]) * x[i];
    return out;
  }
  // SwiGLU, or GPT-NeoX's GELU MLP (exact erf GELU) with its biases.
  std::vector<double> ffn(const LayerWeights& w, const std::vector<double>& xb) const {
    if (c_.ffn == FfnKind::Gelu) {
      auto h = matvec(w.w3, xb);
      add(h, w.b3);
      for (double& e : h) e = 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));
      auto down = matvec(w.w2, h);
      add(down, w.b2);
      return down;
    }
    auto h1 = matvec(w.w1, xb), h3 = matvec(w.w3, xb);
    for (size_t i = 0; i < h1.size(); ++i) h1[i] = h1[i] / (1 + std::exp(-h1[i])) * h3[i];
    return matvec(w.w2, h1);
  }
  std::vector<double> norm(const std::vector<double>& x, const Tensor& w, const Tensor& bias) const {
    if (c_.norm == NormKind::Rms) return rmsnorm(x, w);
    double mean = 0, var = 0;
    for (double e : x) mean += e;
    mean /= double(x.size());
    for (double e : x) var += (e - mean) * (e - mean);
    const double s = 1.0 / std::sqrt(var / double(x.size()) + c_.norm_eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - mean) * s * w.f32()[i] + bias.f32()[i];
    return out;
  }
  std::vector<double> rmsnorm(const std::vector<double>& x, const Tensor& w) const {
    double ss = 0;
    for (double e : x) ss += e * e;
    const double s = 1.0 / std::sqrt(ss / x.size() + c_.norm_eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * s * w.f32()[i];
    return out;
  }
  // Pair i's frequency, written out here from the definitions (HF's
  // _compute_llama3_parameters for llama3) rather than taken from the code under test.
  // Partial rotary (GPT-NeoX): only the first rotated_dims turn.
  double frequency(int i, int hd) const {
    const int rotated = c_.rotary_dims > 0 ? c_.rotary_dims : hd;
    if (2 * i >= rotated) return 0;
    double f = std::pow(double(c_.rope_theta), -2.0 * i / rotated);
    const RopeScaling& s = c_.rope_scaling;
    if (s.type == "linear") return f / s.factor;
    if (s.type != "llama3") return f;
    const double wavelen = 2 * M_PI / f;
    if (wavelen < s.original_context / s.high_freq_factor) return f;
    if (wavelen > s.original_context / s.low_freq_factor) return f / s.factor;
    const double smooth = (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    return (1 - smooth) * f / s.factor + smooth * f;
  }
  void rotate(std::vector<double>& v, double pos) const {
    const int hd = int(v.size());
    for (int i = 0; i < hd / 2; ++i) {
      const double a = pos * frequency(i, hd);
      const double x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * std::cos(a) - x1 * std::sin(a);
      v[2 * i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }

  const Model& m_;
  const ModelConfig& c_;
  PolicyConfig p_;
  std::map<std::pair<int, int>, std::vector<RefEntry>> caches_;
  int t_ = 0;
};

double relative_error(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

void compare_with_reference(const PolicyConfig& policy, int steps,
                            std::shared_ptr<const Model> model = make_synthetic({"stories260K", 7, DType::F32, 0, 0})) {
  auto backend = make_cpu_backend(model, 2);
  auto cache = backend->new_cache(policy);
  ReferenceModel ref(*model, policy);
  std::vector<float> logits;
  int token = 1;
  double worst = 0;
  for (int t = 0; t < steps; ++t) {
    ForwardItem item;
    item.cache = cache.get();
    item.tokens = std::span<const int>(&token, 1);
    item.logits = &logits;
    backend->forward(std::span<ForwardItem>(&item, 1));
    const auto expected = ref.step(token);
    worst = std::max(worst, relative_error(logits, expected));
    ASSERT_LT(relative_error(logits, expected), 1e-4) << policy.describe() << " step " << t;
    for (int l = 0; l < model->config.n_layers; ++l)
      for (int g = 0; g < model->config.n_kv_heads; ++g) ASSERT_EQ(cache->size(l, g), ref.cache_size(l, g));
    // Feed a varied token stream (not the model's own argmax, which may loop).
    token = (token * 37 + 11) % model->config.vocab_size;
  }
  ::testing::Test::RecordProperty("worst_relative_error", std::to_string(worst));
}

// Each kind at a budget of 24 with 4 sinks, so that 80 steps cut often.
PolicyConfig make(const std::string& kind, bool rolling) {
  PolicySettings s;
  s.budget = 24;
  s.given = {{"sinks", 4}, {"heavy", 8}};
  s.rolling = rolling;
  return make_policy(kind, s);
}

}  // namespace

TEST(ForwardReference, FullCacheMatchesFloat64) { compare_with_reference(make("full", false), 60); }
TEST(ForwardReference, StreamingOriginalPositions) { compare_with_reference(make("streaming", false), 80); }
TEST(ForwardReference, StreamingRollingPositions) { compare_with_reference(make("streaming", true), 80); }
TEST(ForwardReference, H2OOriginalPositions) { compare_with_reference(make("h2o", false), 80); }
TEST(ForwardReference, H2ORollingPositions) { compare_with_reference(make("h2o", true), 80); }
TEST(ForwardReference, TovaOriginalPositions) { compare_with_reference(make("tova", false), 80); }
TEST(ForwardReference, TovaRollingPositions) { compare_with_reference(make("tova", true), 80); }

// Qwen2: biases on q, k and v, RoPE base 1e6, grouped-query attention 4:1.
TEST(ForwardReference, Qwen2BiasesMatchFloat64) {
  const auto qwen2 = make_synthetic({"qwen2-260K", 3, DType::F32, 0, 0});
  ASSERT_TRUE(qwen2->config.attention_bias);
  compare_with_reference(make("h2o", false), 60, qwen2);
  compare_with_reference(make("streaming", true), 60, qwen2);
}

// GPT-NeoX: LayerNorm with biases, GELU MLP, output biases, RoPE on a
// quarter of each head, parallel residual; and the sequential form.
TEST(ForwardReference, GptNeoxMatchesFloat64) {
  const auto neox = make_synthetic({"pythia-test", 3, DType::F32, 0, 0});
  ASSERT_TRUE(neox->config.parallel_residual);
  ASSERT_EQ(neox->config.rotary_dims, 4);
  compare_with_reference(make("h2o", false), 60, neox);
  compare_with_reference(make("tova", true), 60, neox);
  auto sequential = std::make_shared<Model>(*neox);
  sequential->config.parallel_residual = false;
  compare_with_reference(make("streaming", false), 60, sequential);
}

// Llama 3.1's RoPE scaling (and plain linear scaling) past a short "original" context.
TEST(ForwardReference, RopeScalingMatchesFloat64) {
  for (const char* type : {"llama3", "linear"}) {
    auto scaled = std::make_shared<Model>(*make_synthetic({"stories260K", 5, DType::F32, 0, 0}));
    RopeScaling& s = scaled->config.rope_scaling;
    s.type = type;
    s.factor = 8;
    s.low_freq_factor = 1;
    s.high_freq_factor = 4;
    s.original_context = 64;  // so that the pairs span all three llama3 bands at head_dim 8
    compare_with_reference(make("full", false), 40, scaled);
  }
}

// A chunked prefill must give the same logits as feeding the same tokens one
// by one when nothing is evicted (the full cache).
TEST(ForwardReference, ChunkedPrefillEqualsOneByOne) {
  auto model = make_synthetic({"stories260K", 3, DType::F32, 0, 0});
  auto backend = make_cpu_backend(model, 2);
  PolicyConfig full;
  auto a = backend->new_cache(full), b = backend->new_cache(full);
  std::vector<int> tokens;
  for (int i = 0; i < 23; ++i) tokens.push_back((i * 53 + 1) % 512);
  std::vector<float> chunk_logits, one_logits;
  ForwardItem item;
  item.cache = a.get();
  item.tokens = tokens;
  item.all_logits = true;
  item.logits = &chunk_logits;
  backend->forward(std::span<ForwardItem>(&item, 1));
  const int vocab = model->config.vocab_size;
  ASSERT_EQ(chunk_logits.size(), tokens.size() * vocab);
  for (size_t t = 0; t < tokens.size(); ++t) {
    ForwardItem one;
    one.cache = b.get();
    one.tokens = std::span<const int>(&tokens[t], 1);
    one.logits = &one_logits;
    backend->forward(std::span<ForwardItem>(&one, 1));
    for (int v = 0; v < vocab; ++v) ASSERT_NEAR(one_logits[v], chunk_logits[t * vocab + v], 1e-4);
  }
}

// Sessions batched in one forward give the same logits as run alone.
TEST(ForwardReference, BatchedSessionsEqualSeparate) {
  auto model = make_synthetic({"stories260K", 5, DType::F32, 0, 0});
  auto backend = make_cpu_backend(model, 2);
  std::vector<PolicyConfig> policies = {make("full", false), make("streaming", false), make("h2o", true),
                                        make("tova", false)};
  std::vector<std::unique_ptr<SessionCache>> together, alone;
  for (auto& p : policies) together.push_back(backend->new_cache(p)), alone.push_back(backend->new_cache(p));
  std::vector<std::vector<float>> lt(policies.size()), la(policies.size());
  for (int t = 0; t < 50; ++t) {
    int token = (t * 29 + 1) % 512;
    std::vector<ForwardItem> items(policies.size());
    for (size_t i = 0; i < policies.size(); ++i) {
      items[i].cache = together[i].get();
      items[i].tokens = std::span<const int>(&token, 1);
      items[i].logits = &lt[i];
    }
    backend->forward(items);
    for (size_t i = 0; i < policies.size(); ++i) {
      ForwardItem one = items[i];
      one.cache = alone[i].get();
      one.logits = &la[i];
      backend->forward(std::span<ForwardItem>(&one, 1));
      for (size_t v = 0; v < la[i].size(); ++v) ASSERT_NEAR(lt[i][v], la[i][v], 1e-5);
    }
  }
}
