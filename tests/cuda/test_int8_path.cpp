// Native precision's 8-bit input path (matvec_int8, kernels/int8_activations.h:
// two 8-bit terms per input) against its exact path (f32 inputs, each weight
// the CPU's value) on the same quantised files, teacher-forced token by token:
// mean |delta NLL| <= 0.01 nats per token (the bound), and the greedy
// token the same at every step but near ties.
//  - The shared references: kjv-1M's and stories260K's greedy continuations,
//    the models quantised to Q8_0 and Q4_0 (their rows of 128 / 64 are too
//    short for the K-quants' 256; the rows of 344 / 172, not whole 32-blocks,
//    stay float and take f32 inputs).
//  - The K-quants (Q4_K_M, Q5_K_M, Q6_K; Q8_0 beside them) on a synthetic
//    test-256, whose random weights make it more sensitive to its inputs'
//    rounding than a trained model; and GPT-NeoX's pass on it.
// Measured in the emulation (2026-11-29): kjv-1M 0.00003 (Q8_0) / 0.00005
// (Q4_0), stories260K 0.0017 / 0.0040, test-256 0.00014-0.00019; one 8-bit
// term alone gave stories260K 0.10 / 0.53 and greedy flips off near ties.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/model/gguf_writer.h"
#include "core/model/model.h"
#include "core/model/type_mix.h"
#include "core/runtime/forced_scoring.h"
#include "tests/assets.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/gptneox_model.h"

using namespace h2o;

namespace {

constexpr double kMeanNllBound = 0.01;  // nats per token
constexpr double kNearTie = 0.05;       // a top-2 logit gap below this may flip the greedy token

struct ForcedRun {
  std::vector<double> nll;  // of tokens[t + 1] after tokens[..t]
  std::vector<int> top;     // the greedy token after tokens[..t]
  std::vector<float> gap;   // its lead over the runner-up
};

ForcedRun teacher_forced(std::shared_ptr<const Model> model, const std::vector<int>& tokens, bool int8) {
  CudaTuning tuning = test::test_tuning();
  tuning.int8_activations = int8;
  auto gpu = test::cuda_backend(model, tuning, "native");
  auto cache = gpu->new_cache(PolicyConfig{});
  const int vocab = model->config.vocab_size;
  std::vector<float> all;
  ForcedRun run;
  for (size_t t = 0; t < tokens.size(); ++t) {
    std::vector<float> logits;
    ForwardItem item;
    item.cache = cache.get();
    item.tokens = std::span<const int>(&tokens[t], 1);
    item.logits = &logits;
    gpu->forward(std::span<ForwardItem>(&item, 1));
    EXPECT_EQ(logits.size(), size_t(vocab));
    int best = 0, second = -1;
    for (int v = 1; v < vocab; ++v)
      if (logits[v] > logits[best]) second = best, best = v;
      else if (second < 0 || logits[v] > logits[second]) second = v;
    run.top.push_back(best);
    run.gap.push_back(logits[best] - logits[second]);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  run.nll = next_token_nlls(all, tokens, vocab);
  return run;
}

// The bound, and which greedy tokens differ (each at a near tie of the exact path).
void expect_within_bound(std::shared_ptr<const Model> model, const std::vector<int>& tokens, const std::string& what) {
  SCOPED_TRACE(what);
  const ForcedRun exact = teacher_forced(model, tokens, false), int8 = teacher_forced(model, tokens, true);
  ASSERT_EQ(exact.nll.size(), int8.nll.size());
  double mean = 0, worst = 0;
  for (size_t t = 0; t < exact.nll.size(); ++t) {
    const double delta = std::abs(exact.nll[t] - int8.nll[t]);
    mean += delta / double(exact.nll.size());
    worst = std::max(worst, delta);
  }
  int flips = 0;
  for (size_t t = 0; t < exact.top.size(); ++t)
    if (exact.top[t] != int8.top[t]) {
      ++flips;
      EXPECT_LT(exact.gap[t], kNearTie) << "step " << t << ": the greedy token changed off a near tie";
    }
  EXPECT_LE(mean, kMeanNllBound);
  EXPECT_GT(mean, 0.0) << "the 8-bit path ran";
  ::testing::Test::RecordProperty(what + "_mean_abs_delta_nll", std::to_string(mean));
  ::testing::Test::RecordProperty(what + "_max_abs_delta_nll", std::to_string(worst));
  ::testing::Test::RecordProperty(what + "_greedy_flips", std::to_string(flips));
  std::printf("[ int8 path ] %-26s %zu tokens: mean |dNLL| %.5f, max %.5f, greedy flips %d\n", what.c_str(),
              exact.nll.size(), mean, worst, flips);
}

// `model` written as a GGUF file of `type` and read back (the loader's blocks, as a user's file).
std::shared_ptr<const Model> quantised_file(const Model& model, const std::string& type) {
  const auto dir = test::temp_dir("int8-path-" + type);
  const std::string path = (dir / "model.gguf").string();
  write_gguf(model, path, parse_type_mix(type, "test"));
  return load_gguf(path);
}

// The prompt and the full cache's greedy ids of a shared reference file, at most `most` tokens.
std::vector<int> reference_tokens(const std::string& file, size_t most) {
  std::ifstream in(test::asset("reference/" + file));
  const nlohmann::json ref = nlohmann::json::parse(in);
  std::vector<int> tokens = ref.at("prompt_ids").get<std::vector<int>>();
  for (const auto& c : ref.at("cases"))
    if (c.at("policy") == "full") {
      const auto ids = c.at("ids").get<std::vector<int>>();
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      break;
    }
  if (tokens.size() > most) tokens.resize(most);
  return tokens;
}

}  // namespace

H2O_CUDA_TEST(Int8Path, SharedReferencesWithinTheNllBound) {
  H2O_REQUIRE_CUDA();
  // The emulation runs every lane as a fiber: 120 tokens keep this test to seconds there.
  const size_t most = test::cuda_emulated() ? 120 : 1000;
  for (const auto& [model_file, reference] : {std::pair<std::string, std::string>{"kjv-1M.bin", "kjv-1M-greedy.json"},
                                              {"stories260K.bin", "stories260K-greedy.json"}}) {
    if (!test::have_asset(model_file) || !test::have_asset("reference/" + reference)) GTEST_SKIP() << model_file << " not found";
    const auto model = load_model(test::asset(model_file));
    const std::vector<int> tokens = reference_tokens(reference, most);
    for (const char* type : {"q8_0", "q4_0"})
      expect_within_bound(quantised_file(*model, type), tokens, model_file + " " + type);
  }
}

H2O_CUDA_TEST(Int8Path, KQuantsWithinTheNllBound) {
  H2O_REQUIRE_CUDA();
  std::vector<int> tokens;
  for (int i = 0; i < 48; ++i) tokens.push_back((i * 131 + 7) % 512);
  for (const char* type : {"q8_0", "q4_k_m", "q5_k_m", "q6_k"}) {
    const auto model = make_synthetic({"test-256", 11, parse_type_mix(type, "test"), 0, 0});
    expect_within_bound(model, tokens, std::string("test-256 ") + type);
  }
}

// GPT-NeoX's pass takes the 8-bit inputs its own way: LayerNorm and the GELU
// write them, and under the parallel residual the second norm's rows are
// quantised by the product itself (CudaBackend::enqueue_layer).
H2O_CUDA_TEST(Int8Path, GptNeoxWithinTheNllBound) {
  H2O_REQUIRE_CUDA();
  std::vector<int> tokens;
  for (int i = 0; i < 32; ++i) tokens.push_back((i * 131 + 7) % 512);
  for (bool parallel : {false, true})
    for (const char* type : {"q8_0", "q4_k_m"})
      expect_within_bound(test::tiny_gptneox(parallel, 17, "test-256", parse_type_mix(type, "test")), tokens,
                          std::string("gptneox ") + (parallel ? "parallel " : "sequential ") + type);
}
