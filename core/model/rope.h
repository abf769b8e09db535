#pragma once
// Rotary position embedding on interleaved pairs (x[2i], x[2i+1]), as in
// llama2.c: pair i turns by pos * freq[i], the frequencies from
// ModelConfig::rope_frequencies() (theta^(-2i/head_dim), with any scaling).
// Angles are computed in double so that large positions and re-rotations stay
// accurate. Every loader keeps Q/K rows in this interleaved order.
#include <cmath>
#include <span>
#include <vector>

namespace h2o {

// cos/sin of every pair's angle at one position.
struct RopeAngles {
  std::vector<float> cos, sin;
  RopeAngles(std::span<const double> freqs, double pos) : cos(freqs.size()), sin(freqs.size()) {
    for (size_t i = 0; i < freqs.size(); ++i) {
      const double a = pos * freqs[i];
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
