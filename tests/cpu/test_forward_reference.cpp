// The CPU backend against an independent float64 forward pass written the
// slow way (tests/cpu/reference_model.h).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/cpu/cpu_backend.h"
#include "core/model/model.h"
#include "core/policy/kept_set.h"
#include "core/policy/policy.h"
#include "tests/cpu/reference_model.h"

using namespace h2o;
using h2o::reference::ReferenceModel;

namespace {

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

// Sessions batched in one forward give the same logits as run alone, at
// widths that are not multiples of 32 and with rolling positions.
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
      ASSERT_EQ(lt[i], la[i]) << "session " << i << ", step " << t;  // bit for bit (test_batched_step.cpp)
    }
  }
}
