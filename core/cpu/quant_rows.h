#pragma once
// Internal to the per-instruction-set kernel files: the loops that walk a
// weight matrix row by row. rows_loop hands a kernel one weight row and one
// activation row at a time (the portable reference); rows_grouped hands it a
// weight row together with up to kMax activation rows at once, so that a
// row's weights are loaded and unpacked once for all of them (every session
// of a batched step, and both terms of the 8-bit activations). The kernel is
// a generic lambda `[&]<int G>(const uint8_t* row, int t0, float* result)`
// that writes dot(row, x[t0 + g]) to result[g] for g < G. tiles_grouped does
// the same for tiles of 16 rows (quant_matvec.h), 16 outputs per activation
// row.
//
// Each loop counts the passes it makes over weight rows (a row handed to its
// kernel once, for however many activation rows) and reports them to
// weight_passes() (quant_matvec.h) once per call.
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

// Activation rows a kernel takes per pass over a weight row: the sessions of
// a batched step (the app shows up to four), twice as many for the 8-bit
// formats, which read each session's row as two terms (cpu_weights.h).
inline constexpr int kMaxGroup = 4;
inline constexpr int kMaxTwoTermGroup = 2 * kMaxGroup;

// out[t * os + o] = dot(row o, t) for every weight row and activation row.
template <class Dot>
void rows_loop(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os, Dot dot) {
  int64_t passes = 0;
  for (int64_t o = 0; o < rows; ++o, w += rb)
    for (int t = 0; t < x.n_x; ++t, ++passes) out[t * os + o] = dot(w, t);
  add_weight_passes(passes);
}

// group.template operator()<G>(t0) for the G < kMax that equals `left`.
template <int G, class Group>
void last_group(int left, int t0, Group& group) {
  if constexpr (G > 0) {
    if (left == G) group.template operator()<G>(t0);
    else last_group<G - 1>(left, t0, group);
  }
}

// Calls group.template operator()<G>(t0) over [0, n_x) in groups of at most
// kMax activation rows, G a compile-time count; returns the number of groups.
template <int kMax, class Group>
int for_groups(int n_x, Group group) {
  int t = 0, groups = 0;
  for (; t + kMax <= n_x; t += kMax, ++groups) group.template operator()<kMax>(t);
  if (t < n_x) last_group<kMax - 1>(n_x - t, t, group), ++groups;
  return groups;
}

template <int kMax = kMaxGroup, class Kernel>
void rows_grouped(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os, Kernel kernel) {
  int64_t passes = 0;
  for (int64_t o = 0; o < rows; ++o, w += rb)
    passes += for_groups<kMax>(x.n_x, [&]<int G>(int t0) {
      float result[G];
      kernel.template operator()<G>(w, t0, result);
      for (int g = 0; g < G; ++g) out[(t0 + g) * os + o] = result[g];
    });
  add_weight_passes(passes);
}

// Tiles [tile_begin, tile_end) of 16 rows each, `tile_bytes` apart: the
// kernel's operator()<G>(tile, t0, out) writes the tile's 16 outputs of
// activation rows t0 .. t0 + G - 1, from `out` (tile k: out + 16 k) at its
// own stride per activation row.
template <class TileKernel>
void tiles_grouped(const uint8_t* tiles, size_t tile_bytes, int64_t tile_begin, int64_t tile_end, const Acts& x,
                   float* out, TileKernel kernel) {
  int64_t passes = 0;
  for (int64_t k = tile_begin; k < tile_end; ++k)
    passes += 16 * for_groups<kMaxGroup>(x.n_x, [&]<int G>(int t0) {
      kernel.template operator()<G>(tiles + size_t(k) * tile_bytes, t0, out + 16 * k);
    });
  add_weight_passes(passes);
}

// As tiles_grouped, two tiles at a time where two are left: the kernel's
// operator()<NT, G>(tile, tile_bytes, t0, out) takes NT (1 or 2) consecutive
// tiles, so that each activation broadcast serves 32 rows and two weight
// streams are read at once.
template <class TileKernel>
void tiles_in_pairs(const uint8_t* tiles, size_t tile_bytes, int64_t tile_begin, int64_t tile_end, const Acts& x,
                    float* out, TileKernel kernel) {
  int64_t passes = 0;
  int64_t k = tile_begin;
  for (; k + 2 <= tile_end; k += 2)
    passes += 32 * for_groups<kMaxGroup>(x.n_x, [&]<int G>(int t0) {
      kernel.template operator()<2, G>(tiles + size_t(k) * tile_bytes, tile_bytes, t0, out + 16 * k);
    });
  if (k < tile_end)
    passes += 16 * for_groups<kMaxGroup>(x.n_x, [&]<int G>(int t0) {
      kernel.template operator()<1, G>(tiles + size_t(k) * tile_bytes, tile_bytes, t0, out + 16 * k);
    });
  add_weight_passes(passes);
}

// Activation row t of the Q8x256 format (the K-quants' 8-bit activations):
// its values, a scale per 256, sum(q) per 16.
struct Q8x256Row {
  const int8_t* q;
  const float* d;
  const int16_t* bsum16;
};
inline Q8x256Row q8x256_row(const Acts& x, int t) {
  return {x.q + t * x.cols, x.d + t * (x.cols / 256), x.bsum16 + t * (x.cols / 16)};
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
