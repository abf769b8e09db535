#pragma once
// Internal to the per-instruction-set kernel files: the loops that walk a
// weight matrix row by row. rows_loop hands a kernel one weight row and one
// activation row at a time; rows_grouped hands it a weight row together with
// up to kMaxGroup activation rows at once, so that a row's weights are loaded and
// unpacked once for all of them (the two terms of the 8-bit activations, and
// every session of a batched step). The kernel is a generic lambda
// `[&]<int G>(const uint8_t* row, int t0, float* result)` that writes
// dot(row, x[t0 + g]) to result[g] for g < G.
//
// Also the scalar unpacking that several kernel files share (k4_unpack).
//
// In an unnamed namespace: each kernel file, compiled for its own instruction
// set, gets its own copy (nothing here may be shared between those files).
#include <cstdint>
#include <cstring>

#include "core/cpu/quant_kernels.h"

namespace h2o::cpu::kern {
namespace {

inline constexpr int kMaxGroup = 4;

// out[t * os + o] = dot(row o, t) for every weight row and activation row.
template <class Dot>
void rows_loop(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os, Dot dot) {
  for (int64_t o = 0; o < rows; ++o, w += rb)
    for (int t = 0; t < x.n_x; ++t) out[t * os + o] = dot(w, t);
}

template <class Kernel>
void rows_grouped(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os, Kernel kernel) {
  float result[kMaxGroup];
  for (int64_t o = 0; o < rows; ++o, w += rb) {
    int t = 0;
    for (; t + 4 <= x.n_x; t += 4) {
      kernel.template operator()<4>(w, t, result);
      for (int g = 0; g < 4; ++g) out[(t + g) * os + o] = result[g];
    }
    const int left = x.n_x - t;
    if (left == 3) kernel.template operator()<3>(w, t, result);
    if (left == 2) kernel.template operator()<2>(w, t, result);
    if (left == 1) kernel.template operator()<1>(w, t, result);
    for (int g = 0; g < left; ++g) out[(t + g) * os + o] = result[g];
  }
}

// The 8 six-bit scales and mins of Q4_K/Q5_K from their 12-byte packing
// (k4_scale_min), as 8 bytes each: with the words a0, a1, a2 of the packing,
// scales 0-3 = a0 & 0x3F, scales 4-7 = (a2 & 0x0F) | (a0 >> 6) << 4 per byte,
// mins likewise from a1 and a2's high nibbles. In general registers: the
// vector pipes are these kernels' bottleneck (a vector form measured ~10 %
// slower).
inline void k4_unpack(const uint8_t* s12, uint64_t* sc, uint64_t* mn) {
  uint32_t a[3];
  std::memcpy(a, s12, 12);
  const uint32_t sc_hi = (a[2] & 0x0F0F0F0F) | ((a[0] >> 2) & 0x30303030);
  const uint32_t mn_hi = ((a[2] >> 4) & 0x0F0F0F0F) | ((a[1] >> 2) & 0x30303030);
  *sc = (a[0] & 0x3F3F3F3F) | uint64_t(sc_hi) << 32;
  *mn = (a[1] & 0x3F3F3F3F) | uint64_t(mn_hi) << 32;
}

}  // namespace
}  // namespace h2o::cpu::kern
