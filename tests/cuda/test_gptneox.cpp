// GPT-NeoX (Pythia) on the CUDA backend: LayerNorm with biases, the GELU
// MLP, output biases, partial rotary, and the parallel or sequential
// residual, against an independent float64 forward pass written here the
// slow way (as tests/cpu/test_forward_reference.cpp is for Llama), with the
// policies' one cut (core/policy/kept_set.h) applied after each fed chunk as
// every backend applies it. The model comes from tests/cuda/gptneox_model.h;
// once the CPU backend runs GPT-NeoX, test_parity.cpp's compare_decode and
// compare_batched take the same model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>

#include "core/model/dtype.h"
#include "core/model/gguf_writer.h"
#include "core/model/type_mix.h"
#include "core/policy/kept_set.h"
#include "core/policy/policy.h"
#include "core/runtime/forced_scoring.h"
#include "core/runtime/sampler.h"
#include "kernels/weight_convert.h"
#include "tests/assets.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/gptneox_model.h"

using namespace h2o;

namespace {

struct RefEntry {
  int32_t pos;
  std::vector<double> k_raw, v;  // the key before RoPE: rotated at each use, by position or slot
  double score = 0;
};

class NeoxReference {
 public:
  // `f16_kv`: keys and values kept as an f16 cache keeps them (the device at
  // native precision): each key rotated to its stream position, then both
  // rounded to f16 (stream positions only: a rolling key is rotated afresh).
  NeoxReference(const Model& m, const PolicyConfig& p, bool f16_kv = false)
      : m_(m), c_(m.config), p_(p), f16_kv_(f16_kv) {}

  // Feeds one chunk (the cut after its last row, as a backend cuts); each row's logits.
  std::vector<std::vector<double>> feed(std::span<const int> tokens) {
    std::vector<std::vector<double>> out;
    for (int token : tokens) out.push_back(row(token));
    for (auto& [key, cache] : caches_) {
      std::vector<int32_t> pos;
      std::vector<float> score;
      for (const RefEntry& e : cache) pos.push_back(e.pos), score.push_back(float(e.score));
      std::vector<RefEntry> kept;
      for (int j : select_kept(p_.rule(), pos, score)) kept.push_back(cache[size_t(j)]);
      cache = std::move(kept);
    }
    return out;
  }
  const std::vector<RefEntry>& cache(int layer, int kv_head) { return caches_[{layer, kv_head}]; }

 private:
  std::vector<double> row(int token) {
    const int dim = c_.dim;
    std::vector<double> x(static_cast<size_t>(dim));
    for (int i = 0; i < dim; ++i) x[size_t(i)] = m_.weights.token_embedding.f32()[size_t(token) * dim + i];
    for (int l = 0; l < c_.n_layers; ++l) {
      const LayerWeights& w = m_.weights.layers[size_t(l)];
      const std::vector<double> attn = attention(l, layernorm(x, w.attn_norm, w.attn_norm_bias));
      if (!c_.parallel_residual) add(x, attn);
      const std::vector<double> mlp = gelu_mlp(w, layernorm(x, w.ffn_norm, w.ffn_norm_bias));
      if (c_.parallel_residual) add(x, attn);  // x + attn(ln1(x)) + mlp(ln2(x)), both of the same x
      add(x, mlp);
    }
    ++t_;
    return matvec(m_.weights.classifier, layernorm(x, m_.weights.final_norm, m_.weights.final_norm_bias));
  }

  // Attention of one row, appending its key and value to each cache: the output projection with its bias.
  std::vector<double> attention(int layer, const std::vector<double>& xb) {
    const LayerWeights& w = m_.weights.layers[size_t(layer)];
    const int hd = c_.head_dim(), group = c_.group_size();
    auto q = matvec(w.wq, xb), k = matvec(w.wk, xb), v = matvec(w.wv, xb);
    add(q, w.bq), add(k, w.bk), add(v, w.bv);
    std::vector<double> heads(size_t(c_.n_heads) * hd, 0.0);
    for (int g = 0; g < c_.n_kv_heads; ++g) {
      auto& cache = caches_[{layer, g}];
      cache.push_back({int32_t(t_), {k.begin() + g * hd, k.begin() + (g + 1) * hd}, {v.begin() + g * hd, v.begin() + (g + 1) * hd}});
      if (f16_kv_) {
        rotate(cache.back().k_raw, t_);
        for (double& e : cache.back().k_raw) e = f16_to_f32(f32_to_f16(float(e)));
        for (double& e : cache.back().v) e = f16_to_f32(f32_to_f16(float(e)));
      }
      const int n = int(cache.size());
      for (auto& e : cache) e.score *= double(p_.rule().score.carry);  // all for H2O, none for TOVA
      for (int qh = g * group; qh < (g + 1) * group; ++qh) {
        std::vector<double> qv(q.begin() + qh * hd, q.begin() + (qh + 1) * hd);
        rotate(qv, p_.rolling ? n - 1 : t_);
        std::vector<double> s(static_cast<size_t>(n));
        double max = -1e300;
        for (int j = 0; j < n; ++j) {
          auto kj = cache[size_t(j)].k_raw;
          if (!f16_kv_) rotate(kj, p_.rolling ? j : cache[size_t(j)].pos);
          double dot = 0;
          for (int i = 0; i < hd; ++i) dot += qv[size_t(i)] * kj[size_t(i)];
          s[size_t(j)] = dot / std::sqrt(double(hd));
          max = std::max(max, s[size_t(j)]);
        }
        double sum = 0;
        for (double& e : s) sum += e = std::exp(e - max);
        for (int j = 0; j < n; ++j) {
          const double pj = s[size_t(j)] / sum;
          cache[size_t(j)].score += pj;
          for (int i = 0; i < hd; ++i) heads[size_t(qh) * hd + i] += pj * cache[size_t(j)].v[size_t(i)];
        }
      }
    }
    auto o = matvec(w.wo, heads);
    add(o, w.bo);
    return o;
  }

  // up + b3, the exact (erf) GELU, down + b2.
  std::vector<double> gelu_mlp(const LayerWeights& w, const std::vector<double>& xb) const {
    auto h = matvec(w.w3, xb);
    add(h, w.b3);
    for (double& e : h) e = 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0)));
    auto down = matvec(w.w2, h);
    add(down, w.b2);
    return down;
  }

  static void add(std::vector<double>& x, const std::vector<double>& y) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  }
  static void add(std::vector<double>& x, const Tensor& bias) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += bias.f32()[i];
  }
  static std::vector<double> matvec(const Tensor& w, const std::vector<double>& x) {
    std::vector<double> out(size_t(w.rows), 0.0);
    for (int64_t o = 0; o < w.rows; ++o)
      for (int64_t i = 0; i < w.cols; ++i) out[size_t(o)] += double(w.f32()[o * w.cols + i]) * x[size_t(i)];
    return out;
  }
  std::vector<double> layernorm(const std::vector<double>& x, const Tensor& weight, const Tensor& bias) const {
    double mean = 0, var = 0;
    for (double e : x) mean += e;
    mean /= double(x.size());
    for (double e : x) var += (e - mean) * (e - mean);
    const double s = 1.0 / std::sqrt(var / double(x.size()) + c_.norm_eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - mean) * s * weight.f32()[i] + bias.f32()[i];
    return out;
  }
  // Interleaved pairs (2i, 2i+1), the first rotary_dims/2 turning by
  // theta^(-2i/rotary_dims), written from GPT-NeoX's definition; the rest still.
  void rotate(std::vector<double>& v, double pos) const {
    const int rotary = c_.rotary_dims > 0 ? c_.rotary_dims : int(v.size());
    for (int i = 0; i < rotary / 2; ++i) {
      const double a = pos * std::pow(double(c_.rope_theta), -2.0 * i / rotary);
      const double x0 = v[size_t(2 * i)], x1 = v[size_t(2 * i + 1)];
      v[size_t(2 * i)] = x0 * std::cos(a) - x1 * std::sin(a);
      v[size_t(2 * i + 1)] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }

  const Model& m_;
  const ModelConfig& c_;
  PolicyConfig p_;
  bool f16_kv_ = false;
  std::map<std::pair<int, int>, std::vector<RefEntry>> caches_;
  int t_ = 0;
};

double relative_error(std::span<const float> a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}


// The device's kept positions and scores of every layer against the reference's.
void expect_same_caches(NeoxReference& ref, const std::vector<LayerState>& states, const std::string& what) {
  for (const LayerState& st : states)
    for (size_t g = 0; g < st.positions.size(); ++g) {
      const std::vector<RefEntry>& kept = ref.cache(st.layer, int(g));
      ASSERT_EQ(st.positions[g].size(), kept.size()) << what << " layer " << st.layer << " head " << g;
      for (size_t j = 0; j < kept.size(); ++j) {
        ASSERT_EQ(st.positions[g][j], kept[j].pos) << what << " layer " << st.layer << " head " << g;
        // A score sums a probability a row: 1e-4 of it (at least of 1), as the logits are held.
        ASSERT_NEAR(st.scores[g][j], kept[j].score, 1e-4 * std::max(1.0, kept[j].score))
            << what << " layer " << st.layer << " head " << g;
      }
    }
}

// Sessions of `policies` fed together in every forward: the chunks (prefill
// rows; more than 8 take the library GEMM), then one token a step. Every
// row's logits within `tolerance` (relative) of the float64 pass, every
// layer's kept positions and scores the reference's. The worst error goes
// into the test's properties. `exact`: the model the reference reads, where
// the device's is quantised (its float32 dequantisation).
void compare_with_reference(std::shared_ptr<const Model> model, const std::vector<PolicyConfig>& policies,
                            const std::vector<int>& chunks, int decode_steps, const CudaTuning& tuning,
                            const std::string& precision = "f32", std::shared_ptr<const Model> exact = nullptr) {
  constexpr double tolerance = 1e-4;  // f32 against float64, as tests/cpu/test_forward_reference.cpp
  auto gpu = test::cuda_backend(model, tuning, precision);
  if (!exact) exact = model;
  const bool f16_kv = precision == "native";  // the device keeps an f16 KV cache at native precision
  std::vector<std::unique_ptr<SessionCache>> caches;
  std::vector<NeoxReference> refs;
  for (const PolicyConfig& p : policies) {
    ASSERT_FALSE(f16_kv && p.rolling) << "the f16 reference keeps keys rotated to their stream positions";
    caches.push_back(gpu->new_cache(p)), refs.emplace_back(*exact, p, f16_kv);
  }
  CapturePlan plan;
  for (int l = 0; l < model->config.n_layers; ++l) plan.layer_states.push_back(l);
  std::vector<int> steps = chunks;
  steps.insert(steps.end(), size_t(decode_steps), 1);
  int next = 1;
  double worst = 0;
  for (size_t step = 0; step < steps.size(); ++step) {
    std::vector<int> tokens;
    for (int i = 0; i < steps[step]; ++i) tokens.push_back(next = (next * 37 + 11) % model->config.vocab_size);
    std::vector<std::vector<float>> logits(policies.size());
    std::vector<std::vector<LayerState>> states(policies.size());
    std::vector<ForwardItem> items(policies.size());
    for (size_t i = 0; i < policies.size(); ++i) {
      items[i].cache = caches[i].get();
      items[i].tokens = tokens;
      items[i].logits = &logits[i];
      items[i].all_logits = true;
      items[i].capture = &plan;
      items[i].layer_states = &states[i];
    }
    gpu->forward(items);
    for (size_t i = 0; i < policies.size(); ++i) {
      const std::string what = policies[i].describe() + " step " + std::to_string(step);
      const auto expected = refs[i].feed(tokens);
      const size_t vocab = size_t(model->config.vocab_size);
      ASSERT_EQ(logits[i].size(), expected.size() * vocab) << what;
      for (size_t r = 0; r < expected.size(); ++r) {
        const double err = relative_error(std::span<const float>(logits[i]).subspan(r * vocab, vocab), expected[r]);
        worst = std::max(worst, err);
        ASSERT_LT(err, tolerance) << what << " row " << r;
      }
      expect_same_caches(refs[i], states[i], what);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  ::testing::Test::RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("    worst relative error of the logits against float64: %.3g\n", worst);
}

void compare_decode(std::shared_ptr<const Model> model, const PolicyConfig& policy, int steps,
                    const CudaTuning& tuning = test::cpu_projection_tuning()) {
  compare_with_reference(std::move(model), {policy}, {}, steps, tuning);
}

}  // namespace

// The full cache, sequential and parallel residual, with the matvec kernel
// doing every projection (the emulation runs it too, as FullCacheLogits).
H2O_CUDA_TEST(GptNeox, SequentialResidualFullCache) {
  H2O_REQUIRE_CUDA();
  compare_decode(test::tiny_gptneox(false), test::small_policy("full", false), 30, test::test_tuning());
}
H2O_CUDA_TEST(GptNeox, ParallelResidualFullCache) {
  H2O_REQUIRE_CUDA();
  compare_decode(test::tiny_gptneox(true), test::small_policy("full", false), 30, test::test_tuning());
}

// H2O's kept sets and scores: the cut does not care about the architecture.
H2O_CUDA_TEST(GptNeox, H2OSequentialAndParallel) {
  H2O_REQUIRE_CUDA();
  compare_decode(test::tiny_gptneox(false, 3), test::small_policy("h2o", false), 60);
  compare_decode(test::tiny_gptneox(true, 3), test::small_policy("h2o", false), 60);
}

// Every policy under both position modes (rolling re-rotates the kept keys
// after a cut, with the partial-rotary frequency table: zeros past the rotary part).
H2O_CUDA_TEST(GptNeox, EveryPolicyAndPositionMode) {
  H2O_REQUIRE_CUDA();
  const auto model = test::tiny_gptneox(true, 5);
  for (const bool rolling : {false, true})
    for (const char* kind : {"streaming", "h2o", "tova"}) compare_decode(model, test::small_policy(kind, rolling), 50);
  compare_decode(model, test::small_policy("h2o", true, 4), 50);
}

// Sessions of every kind in one pass, with prefill chunks (12 rows: the
// library GEMM) before decode steps.
H2O_CUDA_TEST(GptNeox, BatchedSessionsWithPrefill) {
  H2O_REQUIRE_CUDA();
  const std::vector<PolicyConfig> policies = {PolicyConfig{}, test::small_policy("streaming", false),
                                              test::small_policy("h2o", true), test::small_policy("tova", false),
                                              test::small_policy("h2o", false, 4)};
  compare_with_reference(test::tiny_gptneox(true, 9), policies, {12, 3}, 30, test::test_tuning());
  compare_with_reference(test::tiny_gptneox(false, 9), policies, {12}, 20, test::cpu_projection_tuning());
}

// Greedy decode steps as the engine runs them (an id back, no logits):
// replayed from CUDA graphs, the ids the float64 pass's argmax.
H2O_CUDA_TEST(GptNeox, GreedyDecodeFromGraphs) {
  H2O_REQUIRE_CUDA();
  const auto model = test::tiny_gptneox(true, 11);
  auto gpu = test::cuda_backend(model, test::cpu_projection_tuning());
  const PolicyConfig policy = test::small_policy("h2o", false);
  auto cache = gpu->new_cache(policy);
  NeoxReference ref(*model, policy);
  TokenChoice greedy;
  int token = 1, margins = 0;
  for (int step = 0; step < 40; ++step) {
    int chosen = -1;
    ForwardItem item;
    item.cache = cache.get();
    item.tokens = std::span<const int>(&token, 1);
    item.choose = &greedy;
    item.chosen = &chosen;
    gpu->forward(std::span<ForwardItem>(&item, 1));
    const std::vector<double> logits = ref.feed(std::span<const int>(&token, 1)).back();
    std::vector<double> sorted = logits;
    std::sort(sorted.rbegin(), sorted.rend());
    const int best = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (sorted[0] - sorted[1] > 1e-3) {  // a near tie may go either way in f32
      ASSERT_EQ(chosen, best) << "step " << step;
      ++margins;
    }
    token = chosen;
  }
  EXPECT_GT(margins, 30);
  EXPECT_GT(cuda_backend_stats(*gpu).graph_replays, 30);
}

// Quantised matrices kept in their blocks on the device (--precision
// native, its exact path): the same bound against the float64 pass on their
// float32 dequantisation. A prefill chunk of 10 rows multiplies dequantised slabs,
// the decode steps matvec_quant; q4_k_m mixes Q4_K and Q6_K in one Q|K|V.
H2O_CUDA_TEST(GptNeox, NativeQuantisedWeights) {
  H2O_REQUIRE_CUDA();
  for (const char* type : {"q8_0", "q4_k_m"}) {
    SCOPED_TRACE(type);
    const auto quantised = test::tiny_gptneox(true, 17, "test-256", parse_type_mix(type, "test"));
    ASSERT_FALSE(is_float(quantised->weight_dtype()));
    compare_with_reference(quantised, {test::small_policy("h2o", false)}, {10}, 16,
                           test::exact_native(test::test_tuning()), "native",
                           test::widened_to_f32(*quantised));
  }
}

// f16 and bf16 weights: the logits within the bounds of the float64
// pass on the same weights (the device rounds them and its inputs; the
// reference does not, so the bound is the rounding's).
H2O_CUDA_TEST(GptNeox, HalfPrecisionWeights) {
  H2O_REQUIRE_CUDA();
  const auto model = test::tiny_gptneox(true, 13);
  for (const char* precision : {"f16", "bf16"}) {
    auto gpu = test::cuda_backend(model, test::cpu_projection_tuning(), precision);
    auto cache = gpu->new_cache(PolicyConfig{});
    NeoxReference ref(*model, PolicyConfig{});
    int token = 1;
    double worst = 0;
    for (int step = 0; step < 20; ++step) {
      std::vector<float> logits;
      ForwardItem item;
      item.cache = cache.get();
      item.tokens = std::span<const int>(&token, 1);
      item.logits = &logits;
      gpu->forward(std::span<ForwardItem>(&item, 1));
      const std::vector<double> expected = ref.feed(std::span<const int>(&token, 1)).back();
      const double err = relative_error(logits, expected);
      worst = std::max(worst, err);
      EXPECT_LT(err, std::string(precision) == "f16" ? 5e-3 : 3e-2) << precision << " step " << step;
      token = (token * 37 + 11) % model->config.vocab_size;
    }
    std::printf("    %s: worst relative error of the logits against float64: %.3g\n", precision, worst);
  }
}

// What the weights take on the device is what weight_convert.h predicts from
// the shapes: the biases and LayerNorm biases counted, no gate.
H2O_CUDA_TEST(GptNeox, WeightBytes) {
  H2O_REQUIRE_CUDA();
  const auto model = test::tiny_gptneox(false);
  for (const char* precision : {"f32", "f16"}) {
    const kern::WeightBytes expected = kern::weight_bytes(*model, kern::resolve_precision(precision, *model));
    auto gpu = test::cuda_backend(model, test::cpu_projection_tuning(), precision);
    EXPECT_EQ(gpu->weight_bytes(), expected.pass) << precision;
    EXPECT_EQ(cuda_backend_stats(*gpu).weight_device_bytes, expected.device) << precision;
  }
}

// A model whose shape asks for a tensor it does not hold, or for a
// combination the pass does not run, is refused, not run wrong.
H2O_CUDA_TEST(GptNeox, MissingOrUnsupportedPartsAreRefused) {
  H2O_REQUIRE_CUDA();
  auto no_bias = std::make_shared<Model>(*test::tiny_gptneox(false));
  no_bias->weights.final_norm_bias = Tensor{};
  EXPECT_THROW(test::cuda_backend(no_bias, test::test_tuning()), Error);
  auto swiglu_biased = std::make_shared<Model>(*make_synthetic({"stories260K", 7, DType::F32, 0, 0}));
  swiglu_biased->config.output_bias = true;
  EXPECT_THROW(test::cuda_backend(swiglu_biased, test::test_tuning()), Error);
}

// The llama.cpp numbers tests/model/test_gptneox.cpp holds the CPU backend
// to (tests/data/gptneox_llamacpp_nll.json: pythia-test written as GGUF,
// llama.cpp's per-token NLLs), here through the device: the F32 file, read
// back by the GGUF loader, fed as one chunk.
H2O_CUDA_TEST(GptNeox, MatchesLlamaCppNlls) {
  H2O_REQUIRE_CUDA();
  std::ifstream in(std::string(H2O_TEST_DATA) + "/gptneox_llamacpp_nll.json");
  ASSERT_TRUE(in) << "tests/data/gptneox_llamacpp_nll.json";
  const nlohmann::json data = nlohmann::json::parse(in);
  const std::vector<int> tokens = data.at("tokens").get<std::vector<int>>();
  const std::vector<double> theirs = data.at("files").at("f32").at("nll").get<std::vector<double>>();
  const auto dir = test::temp_dir("gptneox-cuda-parity");
  const std::string path = (dir / "f32.gguf").string();
  write_gguf(*make_synthetic({"pythia-test", 1234, DType::F32, data.at("vocab").get<int>(), 0}), path, TypeMix(DType::F32));
  const auto model = load_gguf(path);
  auto gpu = test::cuda_backend(model, test::cpu_projection_tuning());
  auto cache = gpu->new_cache(PolicyConfig{});
  std::vector<float> logits;
  ForwardItem item;
  item.cache = cache.get();
  item.tokens = tokens;
  item.all_logits = true;
  item.logits = &logits;
  gpu->forward(std::span<ForwardItem>(&item, 1));
  ASSERT_EQ(logits.size(), tokens.size() * size_t(model->config.vocab_size));
  const std::vector<double> ours = next_token_nlls(logits, tokens, model->config.vocab_size);
  ASSERT_EQ(ours.size(), theirs.size());
  double mean = 0, worst = 0;
  for (size_t t = 0; t < ours.size(); ++t) {
    const double delta = std::abs(ours[t] - theirs[t]);
    mean += delta / double(ours.size());
    worst = std::max(worst, delta);
  }
  ::testing::Test::RecordProperty("mean_abs_delta_nll", std::to_string(mean));
  EXPECT_LE(mean, 0.01);
  EXPECT_LE(worst, 0.05);
  std::filesystem::remove_all(dir);
}
