// Quantised GGUF files end to end: written by core/model/gguf_writer with the
// block writers of core/model/quant.h, read back memory-mapped in their own
// type, and run by the CPU backend's typed kernels. Each file is compared with
// its exact float32 dequantisation (the same file converted to F32): what
// differs is only what the kernels do (8-bit activations for the quantised
// types), held to the bounds — mean |ΔNLL| <= 0.02 nats, max <= 0.15,
// max |Δlogit| <= 1e-2 x max |logit| (1e-4 where activations stay float32).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/model/gguf_writer.h"
#include "core/model/model.h"
#include "core/model/quant.h"
#include "core/runtime/forced_scoring.h"
#include "tests/assets.h"

using namespace h2o;

namespace {

// Logits of every fed row, teacher-forced, one token per step.
std::vector<std::vector<float>> logits_of(std::shared_ptr<const Model> model, const std::vector<int>& tokens) {
  auto backend = make_cpu_backend(model, 2);
  auto cache = backend->new_cache(PolicyConfig{});
  std::vector<std::vector<float>> out;
  for (int t : tokens) {
    std::vector<float> logits;
    ForwardItem item;
    item.cache = cache.get();
    item.tokens = std::span<const int>(&t, 1);
    item.logits = &logits;
    backend->forward(std::span<ForwardItem>(&item, 1));
    out.push_back(std::move(logits));
  }
  return out;
}

struct Difference {
  double mean_nll = 0, max_nll = 0, max_logit = 0, logit_scale = 0;
};

Difference compare(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                   const std::vector<int>& tokens) {
  Difference d;
  const int vocab = int(a[0].size());
  for (size_t t = 0; t + 1 < tokens.size(); ++t) {
    std::vector<double> la, lb;
    log_softmax_rows(a[t].data(), 1, vocab, la);
    log_softmax_rows(b[t].data(), 1, vocab, lb);
    const double delta = std::abs(la[size_t(tokens[t + 1])] - lb[size_t(tokens[t + 1])]);
    d.mean_nll += delta / double(tokens.size() - 1);
    d.max_nll = std::max(d.max_nll, delta);
    for (int v = 0; v < vocab; ++v) {
      d.max_logit = std::max(d.max_logit, double(std::abs(a[t][size_t(v)] - b[t][size_t(v)])));
      d.logit_scale = std::max(d.logit_scale, double(std::abs(b[t][size_t(v)])));
    }
  }
  return d;
}

class QuantizedFile : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizedFile, MatchesItsExactDequantization) {
  const std::string type = GetParam();
  const auto dir = test::temp_dir("quantized-" + type);
  const std::string quantized = (dir / "model.gguf").string(), exact = (dir / "f32.gguf").string();
  const TypeMix mix = parse_type_mix(type, "test");
  write_gguf(*make_synthetic({"test-256", 11, mix, 0, 0}), quantized, mix);
  const auto q = load_gguf(quantized);
  write_gguf(*q, exact, TypeMix(DType::F32));  // row by row through dequantize_row: exact
  const auto f = load_gguf(exact);

  // The weights stay in the file's type and memory: no widened copy.
  EXPECT_EQ(q->weight_types(), type == "q4_k_m" ? "Q4_K_M" : quant_type_name(mix.base));
  const auto* file_begin = static_cast<const uint8_t*>(q->weights.layers[0].wq.data);
  EXPECT_NE(file_begin, nullptr);
  EXPECT_TRUE(q->owned.empty()) << "a Llama GGUF copies nothing";
  // A step reads the file's weights, or their row tiles, up to 6 % larger (quant_matvec.h).
  const int64_t read = make_cpu_backend(q, 1)->weight_bytes();
  EXPECT_GE(read, q->weight_bytes());
  EXPECT_LE(double(read), 1.06 * double(q->weight_bytes()));

  std::vector<int> tokens;
  for (int i = 0; i < 48; ++i) tokens.push_back((i * 131 + 7) % 512);
  const Difference d = compare(logits_of(q, tokens), logits_of(f, tokens), tokens);
  const bool float_acts = is_float(mix.base);
  EXPECT_LE(d.mean_nll, 0.02) << type;
  EXPECT_LE(d.max_nll, 0.15) << type;
  EXPECT_LE(d.max_logit, (float_acts ? 1e-4 : 1e-2) * d.logit_scale) << type << ": logit scale " << d.logit_scale;
  ::testing::Test::RecordProperty("mean_abs_delta_nll", std::to_string(d.mean_nll));
  ::testing::Test::RecordProperty("max_abs_delta_logit_over_scale", std::to_string(d.max_logit / d.logit_scale));
}

INSTANTIATE_TEST_SUITE_P(EveryType, QuantizedFile,
                         ::testing::Values("f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k",
                                           "q5_k", "q6_k", "q4_k_m"),
                         [](const auto& info) { return info.param; });

// What real files hold where rows are not whole K-quant blocks: llama.cpp's fallbacks.
TEST(QuantizedFile, RowsThatAreNotWholeBlocksFallBack) {
  const TypeMix q4k = parse_type_mix("q4_k", "test");
  EXPECT_EQ(q4k.type_for(TensorRole::FfnGate, 0, 6, 288), DType::Q5_0);  // stories15M's dim
  EXPECT_EQ(q4k.type_for(TensorRole::FfnDown, 0, 5, 172), DType::F16);   // not even 32 divides 172
  EXPECT_EQ(parse_type_mix("q6_k", "t").type_for(TensorRole::AttnQ, 0, 1, 288), DType::Q8_0);
  const TypeMix m = parse_type_mix("q4_k_m", "test");
  EXPECT_EQ(m.type_for(TensorRole::Classifier, 0, 32, 4096), DType::Q6_K);
  EXPECT_EQ(m.type_for(TensorRole::AttnV, 0, 32, 4096), DType::Q6_K);   // the first eighth of the layers
  EXPECT_EQ(m.type_for(TensorRole::AttnV, 5, 32, 4096), DType::Q4_K);
  EXPECT_EQ(m.type_for(TensorRole::AttnQ, 0, 32, 4096), DType::Q4_K);
  EXPECT_EQ(m.type_for(TensorRole::Vector, 0, 32, 4096), DType::F32);
  // A stories15M-shaped Q4_K file mixes the fallback in, and runs.
  const auto model = make_synthetic({"stories15M", 3, q4k, 0, 0});
  EXPECT_EQ(model->weight_types(), "mostly Q5_0 (+ Q4_K)");
  try {
    parse_type_mix("q4_k_x", "--type");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--type: unknown weight type 'q4_k_x'"), std::string::npos);
  }
}

// Qwen2 files keep Q/K rows in the half-split order: written so, read back interleaved, exactly.
TEST(QuantizedFile, Qwen2RoundTripsThroughGguf) {
  const auto dir = test::temp_dir("qwen2-gguf");
  const auto original = make_synthetic({"qwen2-260K", 4, DType::F32, 0, 0});
  write_gguf(*original, (dir / "qwen2.gguf").string(), TypeMix(DType::F32));
  const auto loaded = load_gguf((dir / "qwen2.gguf").string());
  EXPECT_EQ(loaded->config.architecture, "qwen2");
  EXPECT_TRUE(loaded->config.attention_bias);
  EXPECT_FLOAT_EQ(loaded->config.rope_theta, 1e6f);
  std::vector<int> tokens = {1, 5, 9, 200, 3, 77};
  const auto a = logits_of(original, tokens), b = logits_of(loaded, tokens);
  for (size_t t = 0; t < tokens.size(); ++t) EXPECT_EQ(a[t], b[t]) << "row " << t;
}

}  // namespace
