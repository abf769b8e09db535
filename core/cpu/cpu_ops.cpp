#include "core/cpu/cpu_ops.h"

#include <cmath>
#include <algorithm>
#include <cstring>

namespace h2o::cpu {

namespace {
// Sixteen- and eight-wide float vectors (GCC vector extension): under
// -march=native they map to AVX-512 or AVX2 registers, to SSE groups otherwise.
// Sixteen wide matters: with 512-bit loads one core streams weights ~20 %
// faster on AVX-512 machines (llama2.c's run.c gets them from -Ofast).
typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));

inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline v8 load8(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline float hsum(v8 v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}
}  // namespace

float dot(const float* a, const float* b, int n) {
  // Two independent accumulators hide the FMA latency (four did not help).
  v16 s0 = {}, s1 = {};
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 += load16(a + i) * load16(b + i);
    s1 += load16(a + i + 16) * load16(b + i + 16);
  }
  for (; i + 16 <= n; i += 16) s0 += load16(a + i) * load16(b + i);
  const v16 s16 = s0 + s1;
  v8 lo, hi;
  std::memcpy(&lo, &s16, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&s16) + sizeof lo, sizeof hi);
  v8 acc = lo + hi;
  for (; i + 8 <= n; i += 8) acc += load8(a + i) * load8(b + i);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void matmul(float* out, const float* x, const float* w, int rows, int in, int out_features, ThreadPool& pool) {
  // Each weight row is read once from memory and reused for every input row
  // while it sits in L1: decode steps of several sessions share one pass.
  // Small products stay on one thread: waking the team costs more than they do.
  auto rows_of_w = [&](int begin, int end) {
    for (int o = begin; o < end; ++o) {
      const float* wr = w + size_t(o) * in;
      for (int t = 0; t < rows; ++t) out[size_t(t) * out_features + o] = dot(wr, x + size_t(t) * in, in);
    }
  };
  if (pool.size() == 1 || size_t(out_features) * in * rows < kParallelMinWork) {
    rows_of_w(0, out_features);
    return;
  }
  // A few chunks per thread, so that a thread the OS delays does not hold up the rest.
  pool.parallel_for(out_features, std::max(16, out_features / (pool.size() * 4)), rows_of_w);
}

void rmsnorm(float* out, const float* x, const float* weight, int rows, int n, float eps) {
  for (int t = 0; t < rows; ++t) {
    const float* xr = x + size_t(t) * n;
    float* yr = out + size_t(t) * n;
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += double(xr[i]) * xr[i];
    const float scale = float(1.0 / std::sqrt(ss / n + eps));
    for (int i = 0; i < n; ++i) yr[i] = weight[i] * (scale * xr[i]);
  }
}

void softmax(float* x, int n) {
  float max = x[0];
  for (int i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  float sum = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

void axpy(float* y, const float* x, float a, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

void add_bias(float* x, const float* bias, int rows, int n) {
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i) x[size_t(r) * n + i] += bias[i];
}

}  // namespace h2o::cpu
