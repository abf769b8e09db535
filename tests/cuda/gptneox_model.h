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
#include <vector>

#include "core/model/model.h"

namespace h2o::test {

inline std::shared_ptr<const Model> tiny_gptneox(bool parallel_residual, uint64_t seed = 7) {
  auto m = std::make_shared<Model>(*make_synthetic({"stories260K", seed, DType::F32, 0, 0}));
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

}  // namespace h2o::test
