// The needle grid (core/needle/needle_grid.h) against an independent float64
// forward pass (tests/cpu/reference_model.h), on the CPU and through the CUDA
// backend's code (cuda-sim): what every (layer, KV head) holds of the needle
// at the question and at the answer, and the answer's NLL, for the cases
// SEMANTICS.md names — full holds all of it, StreamingLLM the same count in
// every head (a needle straddling its window too), H2O and TOVA heads that
// differ, a quantized cache, a length past the trained context.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/backends/make_backend.h"
#include "core/needle/needle_grid.h"
#include "tests/cpu/reference_model.h"

using namespace h2o;

namespace {

// Trained on 48 tokens, so the grid's longer length lies past it.
std::shared_ptr<const Model> grid_model() { return make_synthetic({"stories260K", 7, DType::F32, 0, 48}); }

NeedleCase grid_case(int vocab) {
  NeedleCase c;
  for (int i = 0; i < 200; ++i) c.haystack.push_back(3 + (i * 37 + 11) % (vocab - 3));
  c.needle = {400, 401, 402, 403, 404, 405};
  c.question = {300, 301, 302};
  c.answer = {400, 405, 402};
  return c;
}

PolicyConfig shaped(const char* kind, std::map<std::string, int> parts, int bits = 0) {
  PolicySettings s;
  s.given = std::move(parts);
  if (bits) s.kv.key_bits = s.kv.value_bits = bits;
  PolicyConfig p = make_policy(kind, s);
  p.shape_kv(grid_model()->config.head_dim());
  return p;
}

std::vector<PolicyConfig> grid_policies() {
  return {PolicyConfig{}, shaped("streaming", {{"sinks", 4}, {"window", 20}}),
          shaped("h2o", {{"sinks", 4}, {"heavy", 8}, {"recent", 12}}), shaped("tova", {{"sinks", 4}, {"window", 20}})};
}

struct ReferenceCell {
  std::vector<int> held_question, held_answer;
  double nll = 0;
  bool exact = true;
};

std::vector<int> held_now(reference::ReferenceModel& ref, const ModelConfig& c, const NeedleStream& s) {
  std::vector<int> held;
  for (int l = 0; l < c.n_layers; ++l)
    for (int g = 0; g < c.n_kv_heads; ++g) {
      const std::vector<int32_t> p = ref.positions(l, g);
      held.push_back(int(std::count_if(p.begin(), p.end(), [&](int32_t x) { return x >= s.needle_begin && x < s.needle_end; })));
    }
  return held;
}

// The stream one token a step through the float64 reference.
ReferenceCell reference_cell(const Model& model, const PolicyConfig& policy, const NeedleStream& s) {
  reference::ReferenceModel ref(model, policy);
  ReferenceCell out;
  for (size_t t = 0; t + 1 < s.tokens.size(); ++t) {
    const std::vector<double> logits = ref.step(s.tokens[t]);
    if (int64_t(t) == s.context - 1) out.held_question = held_now(ref, model.config, s);
    if (int64_t(t) == s.question_end - 1) out.held_answer = held_now(ref, model.config, s);
    if (int64_t(t) < s.question_end - 1) continue;
    const double top = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (double v : logits) sum += std::exp(v - top);
    out.nll += top + std::log(sum) - logits[size_t(s.tokens[t + 1])];
    out.exact = out.exact && std::max_element(logits.begin(), logits.end()) - logits.begin() == s.tokens[t + 1];
  }
  return out;
}

NeedleGridSpec grid_spec() {
  NeedleGridSpec spec;
  spec.input = grid_case(grid_model()->config.vocab_size);
  spec.lengths = {40, 72};
  spec.depths = {0, 50, 100};
  spec.policies = grid_policies();
  return spec;
}

bool heads_differ(const std::vector<int>& held) {
  return std::adjacent_find(held.begin(), held.end(), std::not_equal_to<>()) != held.end();
}

}  // namespace

TEST(NeedleGrid, EqualsTheFloat64ReferenceInEveryHeadAtBothMoments) {
  auto model = grid_model();
  const NeedleGridSpec spec = grid_spec();
  auto backend = make_backend(model, {"cpu", 2, "", 0});
  const NeedleGrid grid = run_needle_grid(*backend, spec);
  ASSERT_EQ(grid.outcomes.size(), spec.lengths.size() * spec.depths.size() * spec.policies.size());
  bool straddled = false, h2o_differs = false, tova_differs = false;
  for (const NeedleOutcome& o : grid.outcomes) {
    const PolicyConfig& policy = spec.policies[o.policy];
    const std::string what = policy.describe() + " at length " + std::to_string(o.length) + ", depth " +
                             std::to_string(o.depth);
    const ReferenceCell ref = reference_cell(*model, policy, needle_stream(spec.input, o.length, o.depth));
    EXPECT_EQ(o.held_question, ref.held_question) << what;
    EXPECT_EQ(o.held_answer, ref.held_answer) << what;
    EXPECT_NEAR(o.recall.nll, ref.nll, 1e-3 * ref.nll) << what;
    EXPECT_EQ(o.recall.exact, ref.exact) << what;
    EXPECT_EQ(o.recall.tokens, 3);
    const ReferenceCell without = reference_cell(*model, policy, stream_without_needle(spec.input, o.length));
    EXPECT_NEAR(o.without.nll, without.nll, 1e-3 * without.nll) << what;
    const int n = o.needle_end - o.needle_begin;
    if (!policy.evicts()) {
      EXPECT_TRUE(std::all_of(o.held_answer.begin(), o.held_answer.end(), [&](int h) { return h == n; })) << what;
      EXPECT_DOUBLE_EQ(survival_fraction(o.held_question, n), 1.0);
    } else if (policy.name() == "streaming") {
      EXPECT_FALSE(heads_differ(o.held_question)) << what << ": StreamingLLM keeps one set for every head";
      straddled = straddled || (o.held_question[0] > 0 && o.held_question[0] < n);
    } else if (policy.name() == "h2o") {
      h2o_differs = h2o_differs || heads_differ(o.held_question);
    } else {
      tova_differs = tova_differs || heads_differ(o.held_question);
    }
  }
  EXPECT_TRUE(straddled) << "no cell had the needle straddling StreamingLLM's window";
  EXPECT_TRUE(h2o_differs) << "no cell where H2O's heads held different counts";
  EXPECT_TRUE(tova_differs) << "no cell where TOVA's heads held different counts";
}

// Forks of a trunk give the numbers of streams fed from the start, bit for
// bit, batched and in chunks too, for less work.
TEST(NeedleGrid, PrefixSharingChangesNoNumberAndFeedsFewerTokens) {
  auto model = grid_model();
  auto backend = make_backend(model, {"cpu", 2, "", 0});
  NeedleGridSpec spec = grid_spec();
  spec.policies.push_back(shaped("h2o", {{"sinks", 4}, {"heavy", 8}, {"recent", 12}}, 4));
  spec.chunk = 4;
  spec.batched = true;
  const NeedleGrid shared = run_needle_grid(*backend, spec);
  spec.share_prefix = false;
  const NeedleGrid alone = run_needle_grid(*backend, spec);
  ASSERT_EQ(shared.outcomes.size(), alone.outcomes.size());
  for (size_t i = 0; i < shared.outcomes.size(); ++i) {
    const NeedleOutcome &a = shared.outcomes[i], &b = alone.outcomes[i];
    EXPECT_EQ(a.held_question, b.held_question);
    EXPECT_EQ(a.held_answer, b.held_answer);
    EXPECT_EQ(a.recall.nll, b.recall.nll);  // bit for bit
    EXPECT_EQ(a.without.nll, b.without.nll);
  }
  EXPECT_LT(shared.tokens_fed, alone.tokens_fed * 3 / 4);
}

// The CUDA backend's own code, quantized caches included, holds what the CPU holds.
TEST(NeedleGrid, ThroughTheCudaBackendsCodeEqualsTheCpu) {
  auto model = grid_model();
  NeedleGridSpec spec = grid_spec();
  spec.lengths = {32};
  spec.depths = {50};
  spec.chunk = 4;  // both backends fed alike; few passes through the emulation
  spec.batched = true;
  spec.policies.push_back(shaped("h2o", {{"sinks", 4}, {"heavy", 8}, {"recent", 12}}, 4));
  spec.policies.push_back(shaped("streaming", {{"sinks", 4}, {"window", 20}}, 2));
  auto cpu = make_backend(model, {"cpu", 2, "", 0});
  auto sim = make_backend(model, {"cuda-sim", 1, "", 0});
  const NeedleGrid expected = run_needle_grid(*cpu, spec), got = run_needle_grid(*sim, spec);
  ASSERT_EQ(expected.outcomes.size(), got.outcomes.size());
  for (size_t i = 0; i < got.outcomes.size(); ++i) {
    const std::string what = spec.policies[got.outcomes[i].policy].describe();
    EXPECT_EQ(got.outcomes[i].held_question, expected.outcomes[i].held_question) << what;
    EXPECT_EQ(got.outcomes[i].held_answer, expected.outcomes[i].held_answer) << what;
    EXPECT_NEAR(got.outcomes[i].recall.nll, expected.outcomes[i].recall.nll, 1e-3 * expected.outcomes[i].recall.nll)
        << what;
  }
}
