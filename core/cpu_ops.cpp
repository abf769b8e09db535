#include "cpu_ops.h"

#include <cmath>
#include <algorithm>
#include <cstring>

namespace h2o::cpu {

namespace {
// Eight-wide float vectors (GCC vector extension): the compiler maps them to
// AVX/AVX-512 under -march=native and to SSE pairs otherwise.
typedef float v8 __attribute__((vector_size(32)));

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
  // Four independent accumulators hide the FMA latency.
  v8 s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 += load8(a + i) * load8(b + i);
    s1 += load8(a + i + 8) * load8(b + i + 8);
    s2 += load8(a + i + 16) * load8(b + i + 16);
    s3 += load8(a + i + 24) * load8(b + i + 24);
  }
  for (; i + 8 <= n; i += 8) s0 += load8(a + i) * load8(b + i);
  float s = hsum((s0 + s1) + (s2 + s3));
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

}  // namespace h2o::cpu
