#pragma once
// Test helper: attention of one item over its cache in float64, as
// SEMANTICS.md defines it, for the kernels' tests over every cache layout
// (test_attention.cpp: rows of the storage type; test_low_bit.cpp: a
// quantized cache's slots as they read back).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/step_desc.h"

namespace h2o::test {

// Float64 attention of one item over its cache, as SEMANTICS.md defines it.
struct AttentionReference {
  std::vector<double> out;       // [row][head][hd]
  std::vector<double> score;     // [kv_head][key] after the step
};

inline AttentionReference reference_attention(const kern::ModelDims& d, int n_before, int rows,
                                              const std::vector<float>& q, const std::vector<float>& k,
                                              const std::vector<float>& v, const std::vector<float>& score, int cap,
                                              const ScoreRule& rule) {
  AttentionReference ref;
  const int keys = n_before + rows, hd = d.head_dim;
  ref.out.assign(size_t(rows) * d.heads * hd, 0.0);
  ref.score.assign(size_t(d.kv_heads) * keys, 0.0);
  for (int g = 0; g < d.kv_heads; ++g)
    for (int j = 0; j < keys; ++j) ref.score[size_t(g) * keys + j] = double(rule.carry) * score[size_t(g) * cap + j];
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < d.heads; ++h) {
      const int g = h / d.group, visible = n_before + r + 1;
      std::vector<double> p(static_cast<size_t>(visible));
      double m = -1e300, z = 0;
      for (int j = 0; j < visible; ++j) {
        double dot = 0;
        for (int c = 0; c < hd; ++c)
          dot += double(q[(size_t(r) * d.heads + h) * hd + c]) * k[((size_t(g) * cap) + j) * hd + c];
        p[size_t(j)] = dot / std::sqrt(double(hd));
        m = std::max(m, p[size_t(j)]);
      }
      for (double& x : p) z += x = std::exp(x - m);
      for (int j = 0; j < visible; ++j) {
        const double pj = p[size_t(j)] / z;
        for (int c = 0; c < hd; ++c)
          ref.out[(size_t(r) * d.heads + h) * hd + c] += pj * v[((size_t(g) * cap) + j) * hd + c];
        if (!rule.last_row_only || r == rows - 1) ref.score[size_t(g) * keys + j] += pj;
      }
    }
  return ref;
}

}  // namespace h2o::test
