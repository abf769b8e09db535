#pragma once
// Rotary position embedding on interleaved pairs (x[2i], x[2i+1]), as in
// llama2.c: pair i turns by pos * theta^(-2i/head_dim). Angles are computed in
// double so that large positions and re-rotations stay accurate.
#include <cmath>
#include <vector>

namespace h2o {

// cos/sin of every pair's angle at one position.
struct RopeAngles {
  std::vector<float> cos, sin;
  RopeAngles(int head_dim, double pos, float theta) : cos(head_dim / 2), sin(head_dim / 2) {
    for (int i = 0; i < head_dim / 2; ++i) {
      const double freq = std::pow(double(theta), -2.0 * i / head_dim);
      const double a = pos * freq;
      cos[i] = float(std::cos(a));
      sin[i] = float(std::sin(a));
    }
  }
};

// Rotates `n_vectors` consecutive head vectors of length head_dim in place.
inline void rope_rotate(float* x, int n_vectors, int head_dim, const RopeAngles& r) {
  for (int v = 0; v < n_vectors; ++v) {
    float* h = x + size_t(v) * head_dim;
    for (int i = 0; i < head_dim / 2; ++i) {
      const float a = h[2 * i], b = h[2 * i + 1];
      h[2 * i] = a * r.cos[i] - b * r.sin[i];
      h[2 * i + 1] = a * r.sin[i] + b * r.cos[i];
    }
  }
}

}  // namespace h2o
