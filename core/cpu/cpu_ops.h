#pragma once
// The float32 building blocks of the CPU forward pass.
#include <cstddef>

namespace h2o::cpu {

// Multiply-adds below which a loop runs on one thread (~10 µs of work). The
// pool's workers still spin between the jobs of one forward pass, so a
// stories15M 288x288 projection (83k) is worth splitting; kjv-1M's 128x128
// ones (16k) are not: waking the workers would cost more, and the first
// session of each step would pay for it.
inline constexpr size_t kParallelMinWork = 1 << 16;

float dot(const float* a, const float* b, int n);
// out[j] = dot(q, rows + j * n, n) for j < n_rows, bit for bit what dot()
// gives: attention's scores of one query against a head's cached keys. Keys
// are taken sixteen at a time and their sums reduced together, in dot's order.
void dot_rows(float* out, const float* q, const float* rows, int n_rows, int n);
// out[0..n) = sum over j < n_rows of weights[j] * rows[j * n ..], accumulated
// in j order from zero, one fused multiply-add per term (attention's weighted
// values), the sums held in registers across rows.
void weighted_rows(float* out, const float* weights, const float* rows, int n_rows, int n);
// The same, carried on from the sums already in out (rows taken a tile at a time).
void weighted_rows_add(float* out, const float* weights, const float* rows, int n_rows, int n);
// out = x / rms(x) * weight, per row of length n.
void rmsnorm(float* out, const float* x, const float* weight, int rows, int n, float eps);
// out = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, per row of
// length n (GPT-NeoX's LayerNorm; statistics in double, as rmsnorm's).
void layernorm(float* out, const float* x, const float* weight, const float* bias, int rows, int n, float eps);
// In place: x = x * Phi(x), the exact (erf) GELU of Hugging Face's "gelu".
void gelu(float* x, size_t n);
// In place: softmax over x[0..n).
void softmax(float* x, int n);
// Adds bias[0..n) to each of `rows` rows of x.
void add_bias(float* x, const float* bias, int rows, int n);

}  // namespace h2o::cpu
