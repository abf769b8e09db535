#pragma once
// An independent float64 forward pass written the slow way, one token a
// step: keys stored before RoPE and every cached key rotated to its position
// on every step (SEMANTICS.md's definition of rolling positions), scores
// summed in double, each (layer, KV head) cut by the policy's rule after the
// step's attention. The CPU backend's tests and the needle's compare with it.
#include <cmath>
#include <map>
#include <vector>

#include "core/model/model.h"
#include "core/policy/kept_set.h"
#include "core/policy/policy.h"

namespace h2o::reference {

struct RefEntry {
  int32_t pos;
  std::vector<double> k_raw, v;
  double score = 0;
};

class ReferenceModel {
 public:
  ReferenceModel(const Model& m, const PolicyConfig& p) : m_(m), c_(m.config), p_(p) {}

  std::vector<double> step(int token) {
    const int dim = c_.dim, hd = c_.head_dim(), group = c_.group_size();
    std::vector<double> x(dim);
    for (int i = 0; i < dim; ++i) x[i] = m_.weights.token_embedding.f32()[size_t(token) * dim + i];
    for (int l = 0; l < c_.n_layers; ++l) {
      const LayerWeights& w = m_.weights.layers[l];
      auto xb = norm(x, w.attn_norm, w.attn_norm_bias);
      auto q = matvec(w.wq, xb), k = matvec(w.wk, xb), v = matvec(w.wv, xb);
      if (c_.attention_bias) add(q, w.bq), add(k, w.bk), add(v, w.bv);
      std::vector<double> att_out(size_t(c_.n_heads) * hd, 0.0);
      for (int g = 0; g < c_.n_kv_heads; ++g) {
        auto& cache = caches_[{l, g}];
        cache.push_back({t_, {k.begin() + g * hd, k.begin() + (g + 1) * hd}, {v.begin() + g * hd, v.begin() + (g + 1) * hd}});
        const int n = int(cache.size());
        // What of each score carries (score_rule.h; one token per step here, so every row is the last).
        for (auto& e : cache) e.score *= double(p_.rule().score.carry);
        for (int qh = g * group; qh < (g + 1) * group; ++qh) {
          std::vector<double> qv(q.begin() + qh * hd, q.begin() + (qh + 1) * hd);
          rotate(qv, p_.rolling ? n - 1 : t_);
          std::vector<double> s(n);
          double max = -1e300;
          for (int j = 0; j < n; ++j) {
            auto kj = cache[j].k_raw;
            rotate(kj, p_.rolling ? j : cache[j].pos);
            double d = 0;
            for (int i = 0; i < hd; ++i) d += qv[i] * kj[i];
            s[j] = d / std::sqrt(double(hd));
            max = std::max(max, s[j]);
          }
          double sum = 0;
          for (auto& e : s) sum += e = std::exp(e - max);
          for (int j = 0; j < n; ++j) {
            const double pj = s[j] / sum;
            cache[j].score += pj;
            for (int i = 0; i < hd; ++i) att_out[size_t(qh) * hd + i] += pj * cache[j].v[i];
          }
        }
        std::vector<int32_t> pos;
        std::vector<float> score;
        for (auto& e : cache) pos.push_back(e.pos), score.push_back(float(e.score));
        std::vector<RefEntry> kept;
        for (int j : select_kept(p_.rule(), pos, score)) kept.push_back(cache[j]);
        cache = std::move(kept);
      }
      auto o = matvec(w.wo, att_out);
      if (c_.output_bias) add(o, w.bo);
      if (c_.parallel_residual) {  // both blocks read the same x
        const auto down = ffn(w, norm(x, w.ffn_norm, w.ffn_norm_bias));
        for (int i = 0; i < dim; ++i) x[i] += o[i] + down[i];
      } else {
        for (int i = 0; i < dim; ++i) x[i] += o[i];
        const auto down = ffn(w, norm(x, w.ffn_norm, w.ffn_norm_bias));
        for (int i = 0; i < dim; ++i) x[i] += down[i];
      }
    }
    ++t_;
    return matvec(m_.weights.classifier, norm(x, m_.weights.final_norm, m_.weights.final_norm_bias));
  }

  int cache_size(int l, int g) { return int(caches_[{l, g}].size()); }
  // The stream positions one (layer, KV head) holds after the last step's cut, ascending.
  std::vector<int32_t> positions(int l, int g) {
    std::vector<int32_t> out;
    for (const RefEntry& e : caches_[{l, g}]) out.push_back(e.pos);
    return out;
  }

 private:
  static void add(std::vector<double>& x, const Tensor& bias) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += bias.f32()[i];
  }
  std::vector<double> matvec(const Tensor& w, const std::vector<double>& x) const {
    std::vector<double> out(w.rows, 0.0);
    for (int64_t o = 0; o < w.rows; ++o)
      for (int64_t i = 0; i < w.cols; ++i) out[o] += double(w.f32()[o * w.cols + i]) * x[i];
    return out;
  }
  // SwiGLU, or GPT-NeoX's GELU MLP (exact erf GELU) with its biases.
  std::vector<double> ffn(const LayerWeights& w, const std::vector<double>& xb) const {
    if (c_.ffn == FfnKind::Gelu) {
      auto h = matvec(w.w3, xb);
      add(h, w.b3);
      for (double& e : h) e = 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));
      auto down = matvec(w.w2, h);
      add(down, w.b2);
      return down;
    }
    auto h1 = matvec(w.w1, xb), h3 = matvec(w.w3, xb);
    for (size_t i = 0; i < h1.size(); ++i) h1[i] = h1[i] / (1 + std::exp(-h1[i])) * h3[i];
    return matvec(w.w2, h1);
  }
  std::vector<double> norm(const std::vector<double>& x, const Tensor& w, const Tensor& bias) const {
    if (c_.norm == NormKind::Rms) return rmsnorm(x, w);
    double mean = 0, var = 0;
    for (double e : x) mean += e;
    mean /= double(x.size());
    for (double e : x) var += (e - mean) * (e - mean);
    const double s = 1.0 / std::sqrt(var / double(x.size()) + c_.norm_eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - mean) * s * w.f32()[i] + bias.f32()[i];
    return out;
  }
  std::vector<double> rmsnorm(const std::vector<double>& x, const Tensor& w) const {
    double ss = 0;
    for (double e : x) ss += e * e;
    const double s = 1.0 / std::sqrt(ss / x.size() + c_.norm_eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * s * w.f32()[i];
    return out;
  }
  // Pair i's frequency, written out here from the definitions (HF's
  // _compute_llama3_parameters for llama3) rather than taken from the code under test.
  // Partial rotary (GPT-NeoX): only the first rotated_dims turn.
  double frequency(int i, int hd) const {
    const int rotated = c_.rotary_dims > 0 ? c_.rotary_dims : hd;
    if (2 * i >= rotated) return 0;
    double f = std::pow(double(c_.rope_theta), -2.0 * i / rotated);
    const RopeScaling& s = c_.rope_scaling;
    if (s.type == "linear") return f / s.factor;
    if (s.type != "llama3") return f;
    const double wavelen = 2 * M_PI / f;
    if (wavelen < s.original_context / s.high_freq_factor) return f;
    if (wavelen > s.original_context / s.low_freq_factor) return f / s.factor;
    const double smooth = (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    return (1 - smooth) * f / s.factor + smooth * f;
  }
  void rotate(std::vector<double>& v, double pos) const {
    const int hd = int(v.size());
    for (int i = 0; i < hd / 2; ++i) {
      const double a = pos * frequency(i, hd);
      const double x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * std::cos(a) - x1 * std::sin(a);
      v[2 * i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }

  const Model& m_;
  const ModelConfig& c_;
  PolicyConfig p_;
  std::map<std::pair<int, int>, std::vector<RefEntry>> caches_;
  int t_ = 0;
};

}  // namespace h2o::reference
