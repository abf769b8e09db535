// What `--precision` keeps on the device, decided on the host from the
// tensors' types and shapes (kernels/weight_convert.h): the names, the native
// types of each block type, and the bytes, down to what a Llama-2-7B Q4_K_M
// takes. No device needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "core/model/model.h"
#include "core/model/quant.h"
#include "core/model/type_mix.h"
#include "core/policy/policy.h"
#include "kernels/blas.h"
#include "kernels/cuda_cache.h"
#include "kernels/step_plan.h"
#include "kernels/weight_convert.h"

using namespace h2o;
using namespace h2o::kern;

namespace {

std::shared_ptr<const Model> quantised(const std::string& shape, const std::string& type) {
  return synthetic_layout({shape, 1, parse_type_mix(type, "test"), 0, 0});
}

}  // namespace

TEST(CudaHostWeights, PrecisionNames) {
  const auto q = quantised("test-256", "q4_k_m");
  const auto f16 = synthetic_layout({"stories260K", 1, DType::F16, 0, 0});
  for (const auto& model : {q, f16}) {
    EXPECT_EQ(resolve_precision("f32", *model).storage, DType::F32);
    EXPECT_EQ(resolve_precision("f16", *model).storage, DType::F16);
    EXPECT_EQ(resolve_precision("bf16", *model).storage, DType::BF16);
    EXPECT_FALSE(resolve_precision("f16", *model).native);
  }
  // A quantised file: native by default, f32 inputs and cache.
  for (const char* name : {"native", ""}) {
    EXPECT_TRUE(resolve_precision(name, *q).native) << name;
    EXPECT_EQ(resolve_precision(name, *q).storage, DType::F32) << name;
  }
  // A float file: native is its own type, the default f32, neither keeps blocks.
  EXPECT_EQ(resolve_precision("native", *f16).storage, DType::F16);
  EXPECT_EQ(resolve_precision("", *f16).storage, DType::F32);
  EXPECT_FALSE(resolve_precision("native", *f16).native);
  try {
    resolve_precision("int8", *q);
    FAIL() << "int8 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--precision"), std::string::npos) << e.what();
  }
}

// Which type each stored type becomes at native precision, alone and fused.
TEST(CudaHostWeights, NativeTypes) {
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) EXPECT_EQ(native_type(t, 4096), t);
  for (DType t : {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K})
    EXPECT_EQ(native_type(t, 4096), DType::F16) << dtype_name(t);
  EXPECT_EQ(native_type(DType::F16, 64), DType::F16);
  EXPECT_EQ(native_type(DType::F16, 172), DType::F32);  // stories260K's hidden: no 16-element pieces
  EXPECT_EQ(native_type(DType::BF16, 64), DType::F32);
  EXPECT_EQ(native_type(DType::F32, 64), DType::F32);
  using V = std::vector<DType>;
  EXPECT_EQ(native_matrix_types({DType::Q4_K, DType::Q4_K, DType::Q6_K}, 256), (V{DType::Q4_K, DType::Q4_K, DType::Q6_K}));
  EXPECT_EQ(native_matrix_types({DType::Q4_K, DType::Q5_0}, 256), (V{DType::Q4_K, DType::F16}));
  EXPECT_EQ(native_matrix_types({DType::Q4_K, DType::F32}, 256), (V{DType::F32, DType::F32}));
}

// A Q4_K_M test model at native precision: a pass reads every layer matrix in
// the file's own bytes, the norms in f32 and the tied classifier (the
// embedding); the device holds that plus 16 bytes after each run of rows of
// one type (layer 1's Q|K|V is Q4_K rows then Q6_K rows: two runs).
TEST(CudaHostWeights, NativeBytesAreTheFileBytes) {
  const auto m = quantised("test-256", "q4_k_m");
  ASSERT_TRUE(m->shared_classifier());
  const Precision native = resolve_precision("native", *m);
  int64_t pass = m->weights.token_embedding.bytes() + m->weights.final_norm.numel() * 4;
  int runs = 1;  // the embedding
  for (const LayerWeights& l : m->weights.layers) {
    for (const Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) pass += t->bytes();
    pass += (l.attn_norm.numel() + l.ffn_norm.numel()) * 4;
    runs += 4 + (l.wv.dtype != l.wq.dtype ? 1 : 0);
  }
  ASSERT_EQ(m->weights.layers[1].wv.dtype, DType::Q6_K);
  const WeightBytes native_bytes = weight_bytes(*m, native);
  EXPECT_EQ(native_bytes.pass, pass);
  EXPECT_EQ(native_bytes.device, pass + 16 * runs);
  // f16 holds 2 bytes an element whatever the file stored.
  const WeightBytes f16 = weight_bytes(*m, resolve_precision("f16", *m));
  EXPECT_GT(f16.pass, 3 * native_bytes.pass);
}

// Issue 20: a 7B Q4_K_M within 5 GiB of device memory. Weights as the file
// stores them (3.8 GiB); the KV cache is f16 at native precision (520 KiB a
// token at 7B: 32 layers x 32 KV heads x 128 x K and V, plus positions and
// scores), so three evicting policies streaming 4096 tokens at budget 256 (in
// chunks of 64, as h2o-cli's prefill: each cache grows to budget + 64 slots)
// take 0.49 GiB, and the scratch (cuBLAS workspace, the dequantised slab, a
// step's activations) less than 0.1 GiB. A 4096-token cache of one session
// alone is 2 GiB even in f16 and fits beside no 7B in 5 GiB: the budget is
// what makes three policies fit. The numbers are recorded for the README.
TEST(CudaHostWeights, Llama2_7bQ4KMFitsIn5GiBWithThreePoliciesAtBudget256) {
  const auto m = quantised("llama2-7b", "q4_k_m");
  const WeightBytes w = weight_bytes(*m, resolve_precision("", *m));
  const ModelConfig& c = m->config;
  ModelDims dims;
  dims.head_dim = c.head_dim();
  const int64_t heads = int64_t(c.n_layers) * c.n_kv_heads;
  const int64_t token = heads * CudaCache::row_bytes(dims, DType::F16, false);  // native keeps f16 KV
  PolicySettings s;
  s.budget = 256;
  const EvictionRule rule = make_policy("h2o", s).rule();
  // A 4096-token stream in chunks of 64: each cache grows by half as it fills, never past budget + 64 slots.
  int slots = 0;
  for (int held = 0, fed = 0; fed < 4096; fed += 64) {
    slots = grown_capacity(rule, held, slots, 64);
    held = std::min(held + 64, rule.budget);  // the cut back to the budget
  }
  const int64_t kv = 3 * int64_t(slots) * token;
  const int64_t scratch = (int64_t(32) << 20) + int64_t(kDequantSlabBytes) + (int64_t(32) << 20);
  const int64_t total = w.device + kv + scratch;
  RecordProperty("weights_device_bytes", std::to_string(w.device));
  RecordProperty("weights_pass_bytes", std::to_string(w.pass));
  RecordProperty("kv_bytes_per_token", std::to_string(token));
  RecordProperty("kv_slots_per_session", std::to_string(slots));
  RecordProperty("total_bytes", std::to_string(total));
  EXPECT_EQ(slots, 256 + 64);
  EXPECT_LT(w.device, int64_t(3900) << 20);  // the file's 3892 MiB, less its vocabulary
  EXPECT_LE(total, int64_t(5) << 30);
  EXPECT_GT(w.device + int64_t(4096) * token, int64_t(5) << 30);  // a full 4k cache would not fit
}
