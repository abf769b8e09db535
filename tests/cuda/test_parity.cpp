// The CUDA backend against the CPU backend at tiny shapes: logits, kept
// sets, scores, evictions, captures, batching, prefill chunks, precision.
#include <gtest/gtest.h>

#include <cmath>

#include "core/cpu/cpu_backend.h"
#include "core/model/model.h"
#include "core/policy/policy.h"
#include "tests/cuda/cuda_test_support.h"

using namespace h2o;

namespace {

std::shared_ptr<const Model> tiny_model(uint64_t seed = 7) { return make_synthetic({"stories260K", seed, DType::F32, 0, 0}); }

PolicyConfig make(const std::string& kind, bool rolling, int slack = 0) {
  PolicySettings s;
  s.budget = 24;
  s.given = {{"sinks", 4}};
  if (kind == "h2o") s.given["heavy"] = 8;
  s.rolling = rolling;
  s.slack = slack;
  return make_policy(kind, s);
}

double relative_error(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += double(a[i] - ref[i]) * (a[i] - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

std::unique_ptr<Backend> cuda(std::shared_ptr<const Model> model, const std::string& precision = "f32") {
  BackendOptions o;
  o.kind = "cuda";
  o.precision = precision;
  return make_cuda_backend(std::move(model), o, test::test_tuning());
}

// Feeds the same token stream to both backends one token at a time and
// compares logits, every layer's kept positions and scores, and evictions.
void compare_decode(const PolicyConfig& policy, int steps) {
  auto model = tiny_model();
  auto cpu = make_cpu_backend(model, 1);
  auto gpu = cuda(model);
  auto a = cpu->new_cache(policy), b = gpu->new_cache(policy);
  CapturePlan plan;
  for (int l = 0; l < model->config.n_layers; ++l) plan.layer_states.push_back(l);
  int token = 1;
  double worst = 0;
  for (int t = 0; t < steps; ++t) {
    std::vector<float> la, lb;
    std::vector<LayerState> sa, sb;
    ForwardItem ia, ib;
    ia.cache = a.get();
    ia.tokens = std::span<const int>(&token, 1);
    ia.logits = &la;
    ia.capture = &plan;
    ia.layer_states = &sa;
    ib = ia;
    ib.cache = b.get();
    ib.logits = &lb;
    ib.layer_states = &sb;
    cpu->forward(std::span<ForwardItem>(&ia, 1));
    gpu->forward(std::span<ForwardItem>(&ib, 1));
    ASSERT_EQ(la.size(), lb.size());
    const double err = relative_error(lb, la);
    worst = std::max(worst, err);
    ASSERT_LT(err, 1e-5) << policy.describe() << " step " << t;
    ASSERT_EQ(a->tokens_seen(), b->tokens_seen());
    ASSERT_EQ(a->max_size(), b->max_size());
    for (size_t l = 0; l < sa.size(); ++l)
      for (size_t g = 0; g < sa[l].positions.size(); ++g) {
        ASSERT_EQ(sa[l].positions[g], sb[l].positions[g]) << policy.describe() << " step " << t << " layer " << l << " head " << g;
        for (size_t j = 0; j < sa[l].scores[g].size(); ++j)
          ASSERT_NEAR(sa[l].scores[g][j], sb[l].scores[g][j], 1e-4) << "step " << t;
      }
    ASSERT_EQ(a->last_evictions(), b->last_evictions()) << "step " << t;
    token = (token * 37 + 11) % model->config.vocab_size;
  }
  ::testing::Test::RecordProperty("worst_relative_error", std::to_string(worst));
}

}  // namespace

#define PARITY H2O_CUDA_SUITE(Parity)

TEST(PARITY, FullCacheLogits) {
  H2O_REQUIRE_CUDA();
  compare_decode(make("full", false), 40);
}
TEST(PARITY, StreamingOriginal) {
  H2O_REQUIRE_CUDA();
  compare_decode(make("streaming", false), 60);
}
TEST(PARITY, H2OOriginal) {
  H2O_REQUIRE_CUDA();
  compare_decode(make("h2o", false), 60);
}
TEST(PARITY, H2ORolling) {
  H2O_REQUIRE_CUDA();
  compare_decode(make("h2o", true), 60);
}
TEST(PARITY, TovaOriginal) {
  H2O_REQUIRE_CUDA();
  compare_decode(make("tova", false), 60);
}
