// The CPU backend's batched step (the app's panes side by side, --batched)
// against the same sessions one at a time, in every weight type: each weight
// row is loaded once a step for up to four sessions, as for one (issue 58:
// float32 products took the sessions' rows one at a time, and three sessions
// cost 2.1x one), and every session's logits are bit for bit its own alone.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/quant_matvec.h"
#include "core/model/model.h"
#include "core/model/type_mix.h"
#include "core/policy/policy.h"

using namespace h2o;

namespace {

// Every type the kernels take, on a shape whose rows hold the K-quants' blocks.
const char* const kTypes[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                              "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q4_k_m"};

std::shared_ptr<const Model> model_of(const std::string& type) {
  return make_synthetic({"test-256", 5, parse_type_mix(type, "type"), 0, 0});
}

// Rows of the matrices a decode step multiplies activations by: the
// projections of every layer, then the classifier (the embedding where tied).
int64_t projected_rows(const Model& m) {
  int64_t rows = m.weights.classifier.rows;
  for (const LayerWeights& l : m.weights.layers)
    for (const Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) rows += t->rows;
  return rows;
}

std::vector<PolicyConfig> four_policies() {
  PolicySettings s;
  s.budget = 12;
  s.given = {{"sinks", 2}, {"heavy", 4}};
  std::vector<PolicyConfig> out;
  for (const char* kind : {"full", "streaming", "h2o", "tova"}) out.push_back(make_policy(kind, s));
  return out;
}

// One forward pass of `caches` (one token each), their logits.
std::vector<std::vector<float>> step(Backend& backend, const std::vector<SessionCache*>& caches, int token) {
  std::vector<std::vector<float>> logits(caches.size());
  std::vector<ForwardItem> items(caches.size());
  for (size_t i = 0; i < caches.size(); ++i) {
    items[i].cache = caches[i];
    items[i].tokens = std::span<const int>(&token, 1);
    items[i].logits = &logits[i];
  }
  backend.forward(items);
  return logits;
}

bool kernels_group_rows() {
  return cpu::best_isa() != cpu::Isa::Portable;  // the portable reference takes one activation row at a time
}

}  // namespace

TEST(BatchedStep, OnePassOverEachWeightRowForUpToFourSessions) {
  if (!kernels_group_rows()) GTEST_SKIP() << "portable kernels: one pass per activation row";
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    const auto model = model_of(type);
    auto backend = make_cpu_backend(model, 2);
    std::vector<std::unique_ptr<SessionCache>> owned;
    std::vector<SessionCache*> caches;
    for (const PolicyConfig& p : four_policies()) owned.push_back(backend->new_cache(p)), caches.push_back(owned.back().get());
    step(*backend, caches, 3);  // a first token in every cache
    for (size_t n = 1; n <= caches.size(); ++n) {
      const cpu::WeightPassCount count;
      step(*backend, std::vector<SessionCache*>(caches.begin(), caches.begin() + long(n)), int(7 + n));
      EXPECT_EQ(count.passes(), projected_rows(*model)) << n << " sessions in one step";
    }
  }
}

TEST(BatchedStep, SessionsGetTheirLogitsAloneBitForBit) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    const auto model = model_of(type);
    auto backend = make_cpu_backend(model, 2);
    std::vector<std::unique_ptr<SessionCache>> together, alone;
    std::vector<SessionCache*> batch;
    for (const PolicyConfig& p : four_policies()) {
      together.push_back(backend->new_cache(p));
      alone.push_back(backend->new_cache(p));
      batch.push_back(together.back().get());
    }
    // Past the budget, so that every evicting policy has cut by the end.
    for (int t = 0; t < 20; ++t) {
      const int token = (t * 29 + 1) % model->config.vocab_size;
      const auto batched = step(*backend, batch, token);
      for (size_t i = 0; i < alone.size(); ++i)
        ASSERT_EQ(step(*backend, {alone[i].get()}, token)[0], batched[i]) << "session " << i << ", step " << t;
    }
  }
}
