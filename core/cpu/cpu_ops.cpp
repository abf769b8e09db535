#include "core/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace h2o::cpu {

namespace {
// Sixteen- and eight-wide float vectors (GCC's vector extension, which clang has too): under
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

// dot's first stage: sixteen partial sums over a[0..n16) . b[0..n16), n16 a
// multiple of 16. Two independent accumulators hide the FMA latency (four
// did not help).
inline v16 partial16(const float* a, const float* b, int n16) {
  v16 s0 = {}, s1 = {};
  int i = 0;
  for (; i + 32 <= n16; i += 32) {
    s0 += load16(a + i) * load16(b + i);
    s1 += load16(a + i + 16) * load16(b + i + 16);
  }
  if (i < n16) s0 += load16(a + i) * load16(b + i);
  return s0 + s1;
}

// The halves of v: lanes 0-7 and 8-15.
inline v8 low8(v16 v) {
  v8 h;
  std::memcpy(&h, &v, sizeof h);
  return h;
}
inline v8 high8(v16 v) {
  v8 h;
  std::memcpy(&h, reinterpret_cast<const char*>(&v) + sizeof h, sizeof h);
  return h;
}

// w * x + acc, fused where the CPU has fused multiply-adds, as the compiler
// contracts the vector loops' `acc += w * v`: every element of weighted_rows
// rounds alike (left to itself, the compiler split a scalar loop into
// vector products and separate additions).
inline float mul_add(float w, float x, float acc) {
#ifdef __FMA__
  return std::fma(w, x, acc);
#else
  return w * x + acc;
#endif
}

// Lane j of the result = hsum(low8(s[j]) + high8(s[j])) for sixteen partial
// sums at once, each in the same order of additions as dot() does alone: a
// tree of shuffles whose every level pairs the lanes dot's reduction pairs.
// The lane lists are template arguments: __builtin_shufflevector (GCC 12 and clang alike) takes
// its lanes as constants, lanes 0-15 of `a` and 16-31 of `b`.
template <int... Lanes>
using lanes = std::integer_sequence<int, Lanes...>;
template <int... First, int... Second>
inline v16 pair_halves(v16 a, v16 b, lanes<First...>, lanes<Second...>) {
  return __builtin_shufflevector(a, b, First...) + __builtin_shufflevector(a, b, Second...);
}
inline v16 reduce16(const v16* s) {
  // low8 + high8 of two sums per vector: lanes 0-7 of s[2k], then of s[2k + 1].
  v16 eighths[8];
  for (int k = 0; k < 8; ++k)
    eighths[k] = pair_halves(s[2 * k], s[2 * k + 1], lanes<0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23>{},
                             lanes<8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31>{});
  // (v0 + v4), (v1 + v5), (v2 + v6), (v3 + v7): four lanes per sum.
  v16 quarters[4];
  for (int k = 0; k < 4; ++k)
    quarters[k] = pair_halves(eighths[2 * k], eighths[2 * k + 1],
                              lanes<0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27>{},
                              lanes<4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31>{});
  // ((v0 + v4) + (v1 + v5)) and ((v2 + v6) + (v3 + v7)): two lanes per sum.
  using even = lanes<0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30>;
  using odd = lanes<1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31>;
  const v16 halves[2] = {pair_halves(quarters[0], quarters[1], even{}, odd{}),
                         pair_halves(quarters[2], quarters[3], even{}, odd{})};
  return pair_halves(halves[0], halves[1], even{}, odd{});
}
}  // namespace

float dot(const float* a, const float* b, int n) {
  const int n16 = n / 16 * 16;
  const v16 s16 = partial16(a, b, n16);
  v8 acc = low8(s16) + high8(s16);
  int i = n16;
  for (; i + 8 <= n; i += 8) acc += load8(a + i) * load8(b + i);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void dot_rows(float* out, const float* q, const float* rows, int n_rows, int n) {
  int j = 0;
  if (n % 16 == 0)  // otherwise dot's tails (eight wide, then scalar) come into play: one row at a time
    for (; j + 16 <= n_rows; j += 16) {
      v16 s[16];
      for (int k = 0; k < 16; ++k) s[k] = partial16(q, rows + size_t(j + k) * n, n);
      const v16 sums = reduce16(s);
      std::memcpy(out + j, &sums, sizeof sums);
    }
  for (; j < n_rows; ++j) out[j] = dot(q, rows + size_t(j) * n, n);
}

namespace {
// weighted_rows over C sixteen-wide columns starting at rows' column 0: the
// C sums stay in registers for the whole pass over the rows.
template <int C>
void weighted_columns(float* out, const float* weights, const float* rows, int n_rows, int n, bool onto_out) {
  v16 acc[C] = {};
  if (onto_out) std::memcpy(acc, out, sizeof acc);
  for (int j = 0; j < n_rows; ++j)
    for (int c = 0; c < C; ++c) acc[c] += weights[j] * load16(rows + size_t(j) * n + 16 * c);
  std::memcpy(out, acc, sizeof acc);
}
}  // namespace

namespace {
void weighted_rows_onto(float* out, const float* weights, const float* rows, int n_rows, int n, bool onto_out) {
  int i = 0;
  for (; i + 64 <= n; i += 64) weighted_columns<4>(out + i, weights, rows + i, n_rows, n, onto_out);
  for (; i + 16 <= n; i += 16) weighted_columns<1>(out + i, weights, rows + i, n_rows, n, onto_out);
  for (; i < n; ++i) {
    float acc = onto_out ? out[i] : 0.0f;
    for (int j = 0; j < n_rows; ++j) acc = mul_add(weights[j], rows[size_t(j) * n + i], acc);
    out[i] = acc;
  }
}
}  // namespace

void weighted_rows(float* out, const float* weights, const float* rows, int n_rows, int n) {
  weighted_rows_onto(out, weights, rows, n_rows, n, false);
}

void weighted_rows_add(float* out, const float* weights, const float* rows, int n_rows, int n) {
  weighted_rows_onto(out, weights, rows, n_rows, n, true);
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

void layernorm(float* out, const float* x, const float* weight, const float* bias, int rows, int n, float eps) {
  for (int t = 0; t < rows; ++t) {
    const float* xr = x + size_t(t) * n;
    float* yr = out + size_t(t) * n;
    // Two passes (mean, then squared deviations): no cancellation when the
    // mean is large against the spread, as in a residual stream.
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += xr[i];
    const double mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += (xr[i] - mean) * (xr[i] - mean);
    const float scale = float(1.0 / std::sqrt(ss / n + eps)), shift = float(mean);
    for (int i = 0; i < n; ++i) yr[i] = weight[i] * (scale * (xr[i] - shift)) + bias[i];
  }
}

void gelu(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * float(M_SQRT1_2)));
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

void add_bias(float* x, const float* bias, int rows, int n) {
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i) x[size_t(r) * n + i] += bias[i];
}

}  // namespace h2o::cpu
