#pragma once
// A tiny GPT-NeoX model for the CUDA backend's tests, built here rather than
// loaded: stories260K's shape and weights with what GPT-NeoX adds — LayerNorm
// with biases, a GELU MLP (no gate) with biases, the attention output bias,
// q/k/v biases, partial rotary (half of each head) and, by choice, the
// parallel residual — the added tensors random, in buffers the model owns.
// Any backend that runs GPT-NeoX can be compared on it (a Model in, as the
// parity helpers take).
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/model/dtype.h"
#include "core/model/model.h"
#include "core/model/type_mix.h"

namespace h2o::test {

// `shape` and `types`: a synthetic shape's matrices in a float type or a
// quantised mix (the added vectors are f32 whatever the mix).
inline std::shared_ptr<const Model> tiny_gptneox(bool parallel_residual, uint64_t seed = 7,
                                                 const std::string& shape = "stories260K",
                                                 const TypeMix& types = DType::F32) {
  auto m = std::make_shared<Model>(*make_synthetic({shape, seed, types, 0, 0}));
  ModelConfig& c = m->config;
  c.architecture = "gptneox";
  c.norm = NormKind::Layer;
  c.ffn = FfnKind::Gelu;
  c.attention_bias = true;
  c.output_bias = true;
  c.parallel_residual = parallel_residual;
  c.rotary_dims = c.head_dim() / 2;  // Pythia rotates a quarter; half keeps a rotated and a still pair at head_dim 8
  std::mt19937_64 rng(seed * 31 + 5);
  // A vector of `n` values around `centre` (norm weights near 1, biases near 0).
  auto vector = [&](int64_t n, float centre, float spread) {
    auto data = std::make_shared<std::vector<float>>(size_t(n));
    std::uniform_real_distribution<float> u(-spread, spread);
    for (float& v : *data) v = centre + u(rng);
    m->owned.push_back(data);
    Tensor t;
    t.data = data->data();
    t.dtype = DType::F32;
    t.rows = 1;
    t.cols = n;
    return t;
  };
  const int64_t dim = c.dim, hidden = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  for (LayerWeights& l : m->weights.layers) {
    l.w1 = Tensor{};  // a GELU MLP has no gate
    l.attn_norm = vector(dim, 1.0f, 0.2f);
    l.ffn_norm = vector(dim, 1.0f, 0.2f);
    l.attn_norm_bias = vector(dim, 0.0f, 0.1f);
    l.ffn_norm_bias = vector(dim, 0.0f, 0.1f);
    l.bq = vector(q, 0.0f, 0.1f);
    l.bk = vector(kv, 0.0f, 0.1f);
    l.bv = vector(kv, 0.0f, 0.1f);
    l.bo = vector(dim, 0.0f, 0.05f);
    l.b3 = vector(hidden, 0.0f, 0.1f);
    l.b2 = vector(dim, 0.0f, 0.05f);
  }
  m->weights.final_norm = vector(dim, 1.0f, 0.2f);
  m->weights.final_norm_bias = vector(dim, 0.0f, 0.1f);
  c.validate("tiny gptneox");
  return m;
}

// The model with every tensor widened to float32 in buffers it owns (a
// quantised matrix dequantised exactly): what a float64 reference reads.
inline std::shared_ptr<const Model> widened_to_f32(const Model& m) {
  auto out = std::make_shared<Model>(m);
  auto widen = [&](const Tensor* view) {
    Tensor& t = const_cast<Tensor&>(*view);  // `view` points into *out
    if (t.data == nullptr || t.dtype == DType::F32) return;
    auto wide = std::make_shared<std::vector<float>>(size_t(t.numel()));
    for (int64_t r = 0; r < t.rows; ++r)
      convert_to_f32(static_cast<const char*>(t.data) + r * t.row_bytes(), t.dtype, size_t(t.cols),
                     wide->data() + r * t.cols);
    t.data = wide->data();
    t.dtype = DType::F32;
    out->owned.push_back(wide);
  };
  for (const Tensor* t : out->all_tensors()) widen(t);
  if (m.shared_classifier()) out->weights.classifier = out->weights.token_embedding;
  return out;
}

}  // namespace h2o::test
