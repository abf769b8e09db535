// A policy with a kind of score no registered policy has — one whose score
// keeps half of the last step's (a decaying H2O) — written as a unit here and
// nowhere else: no backend, kernel or registry line knows it. It runs on the
// CPU as the float64 reference sums it and through the CUDA backend's code
// (the emulation) as on the CPU, which is what "a policy is one unit" means
// for its score (core/policy/score_rule.h).
#include <gtest/gtest.h>

#include "core/backends/make_backend.h"
#include "core/model/model.h"
#include "core/policy/policy.h"
#include "tests/cpu/reference_model.h"

using namespace h2o;

namespace {

constexpr PolicyParam kParams[] = {
    {"sinks", "attention sinks", 4, 0, ""},
    {"heavy", "tokens kept for their decaying score", 8, 0, ""},
    {"recent", "the last tokens kept", 12, 1, "needs the newest token"},
};

EvictionRule decaying_rule(std::span<const int> v) {
  return {.sinks = v[0], .recent = v[2], .by_score = v[1], .score = {.carry = 0.5f}, .budget = v[0] + v[1] + v[2]};
}

const PolicyUnit kDecaying{.name = "decaying", .title = "Decaying H2O", .short_title = "Decay", .color = "#888888",
                           .description = "sinks, recent tokens and the tokens of highest decaying attention",
                           .params = kParams, .rule = decaying_rule};

std::shared_ptr<const Model> small_model() { return make_synthetic({"stories260K", 7, DType::F32, 0, 0}); }

// One token a step through `backend`; the logits of each step and the positions every (layer, KV head) holds after it.
struct Trace {
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<std::vector<int32_t>>> held;  // [step][layer * kv_heads + kv]
};

Trace run(Backend& backend, const PolicyConfig& policy, int steps) {
  auto cache = backend.new_cache(policy);
  Trace trace;
  int token = 1;
  for (int t = 0; t < steps; ++t) {
    ForwardItem item;
    item.cache = cache.get();
    item.tokens = std::span<const int>(&token, 1);
    item.logits = &trace.logits.emplace_back();
    backend.forward(std::span<ForwardItem>(&item, 1));
    auto& held = trace.held.emplace_back();
    for (int l = 0; l < cache->layers(); ++l) {
      const LayerState state = cache->read_layer(l);
      for (const auto& positions : state.positions) held.push_back(positions);
    }
    token = (token * 37 + 11) % backend.model().config.vocab_size;  // varied, not the model's own argmax
  }
  return trace;
}

double relative_error(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) num += (a[i] - ref[i]) * (a[i] - ref[i]), den += ref[i] * ref[i];
  return std::sqrt(num / den);
}

}  // namespace

TEST(NewScoreKind, RunsOnTheCpuAsTheFloat64ReferenceSumsIt) {
  auto model = small_model();
  const PolicyConfig policy = PolicyConfig::of(kDecaying);
  auto cpu = make_backend(model, {"cpu", 2, "", 0});
  const Trace got = run(*cpu, policy, 80);
  reference::ReferenceModel ref(*model, policy);
  int token = 1;
  for (int t = 0; t < 80; ++t) {
    ASSERT_LT(relative_error(got.logits[size_t(t)], ref.step(token)), 1e-4) << "step " << t;
    for (int l = 0; l < model->config.n_layers; ++l)
      for (int g = 0; g < model->config.n_kv_heads; ++g)
        ASSERT_EQ(got.held[size_t(t)][size_t(l * model->config.n_kv_heads + g)], ref.positions(l, g))
            << "step " << t << " layer " << l << " KV head " << g;
    token = (token * 37 + 11) % model->config.vocab_size;
  }
}

TEST(NewScoreKind, KeepsOtherTokensThanTheScoreThatAccumulates) {
  auto model = small_model();
  auto cpu = make_backend(model, {"cpu", 2, "", 0});
  PolicyConfig h2o = PolicyConfig::named("h2o");
  h2o.set("sinks", 4).set("heavy", 8).set("recent", 12);
  const Trace decaying = run(*cpu, PolicyConfig::of(kDecaying), 80), accumulating = run(*cpu, h2o, 80);
  int differing = 0;
  for (size_t t = 0; t < decaying.held.size(); ++t) differing += decaying.held[t] != accumulating.held[t];
  EXPECT_GT(differing, 10) << "of 80 steps, the kept sets differ in";
}

TEST(NewScoreKind, RunsThroughTheCudaBackendsCodeAsOnTheCpu) {
  auto model = small_model();
  const PolicyConfig policy = PolicyConfig::of(kDecaying);
  auto cpu = make_backend(model, {"cpu", 2, "", 0});
  auto sim = make_backend(model, {"cuda-sim", 1, "", 0});
  const Trace expected = run(*cpu, policy, 40), got = run(*sim, policy, 40);
  for (size_t t = 0; t < got.logits.size(); ++t) {
    ASSERT_EQ(got.held[t], expected.held[t]) << "step " << t;
    for (size_t v = 0; v < got.logits[t].size(); ++v)
      ASSERT_NEAR(got.logits[t][v], expected.logits[t][v], 1e-4) << "step " << t << " token " << v;
  }
}
