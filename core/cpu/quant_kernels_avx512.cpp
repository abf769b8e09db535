// AVX-512 (F, BW, DQ, VL) row kernels. Compiled with -mavx512f -mavx512bw
// -mavx512dq -mavx512vl -mfma -mf16c whatever the project's flags, and
// called only when the CPU reports those features and AVX2 (quant_matvec.cpp).
//
// On Zen 4, which issues a 512-bit operation as two 256-bit halves, the
// 512-bit form is faster only where it saves instructions (mask registers for
// the fifth bits of Q5_0/Q5_1, one permute for 16 sub-block scales):
// avx512_kernel() below hands Q4_0 and Q4_1 to the AVX2 kernels, which
// measured as fast or faster there (single-thread hot matvecs, 512 x 768 and
// 512 x 2048). The 16-bit kernels are 512-bit everywhere: on a core with
// full-width AVX-512 (this project's Xeon) they ran 1.6-2x the AVX2 form.
// The float, Q8_0, Q4_K and Q5_K kernels are the width-generic ones
// (quant_kernels_wide.h) at 512 bits.
//
// 8-bit activations and maddubs saturation: see quant_kernels_avx2.cpp;
// 16-bit activations and int32 overflow: quant_matvec.h.
//
// GCC 12 warns about the deliberately undefined upper halves in its own
// AVX-512 headers (_mm512_undefined_*, a known false positive; "maybe" or
// not depending on where it is inlined).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "core/cpu/quant_kernels.h"
#include "core/cpu/quant_kernels_wide.h"
#include "core/cpu/quant_kernels_x86.h"
#include "core/cpu/quant_rows.h"

namespace h2o::cpu::kern {
namespace {

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

inline float hsum512(__m512 v) { return Wide<512>::hsum(v); }

// Two 256-bit halves into one 512-bit register: lo in bits 0-255.
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// Moves bit `from` of every byte to bit `to` (< 8 both); other bits are
// garbage for the caller to mask. 16-bit shifts keep each byte's own bits as
// long as the shift is by |to - from| in the right direction.
inline __m512i move_bit(__m512i v, int from, int to) {
  return from >= to ? _mm512_srli_epi16(v, unsigned(from - to)) : _mm512_slli_epi16(v, unsigned(to - from));
}

// int16 lane k of chunk c of a super-block takes scale (32 / kLanes) c +
// k / kLanes of its 16, where kLanes int16 lanes share one scale: the
// indexes for _mm512_permutexvar_epi16 over the 16 scales. kLanes = 16: the
// 32 elements of chunk c < 8 (Q6_K's 16-bit kernel); kLanes = 8: the 32 pair
// sums of a 64-element chunk c < 4 of 16-element sub-blocks (Q2_K, Q3_K).
template <int kLanes>
struct ScaleIdx {
  static constexpr int kChunks = 16 * kLanes / 32;
  __m512i k16[kChunks];
  ScaleIdx() {
    alignas(64) int16_t v[32];
    for (int c = 0; c < kChunks; ++c) {
      for (int k = 0; k < 32; ++k) v[k] = int16_t(32 / kLanes * c + k / kLanes);
      k16[c] = _mm512_load_si512(v);
    }
  }
};

// Q6_K: codes minus 32 widened to int16 and multiplied by their 16-element
// sub-block's scale once for the G rows (16 products per int32 lane per
// super-block: below 2^31, quant_matvec.h).
void k_q6_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  const ScaleIdx<16> idx;
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30), off = _mm512_set1_epi8(32);
  rows_grouped(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    __m512 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + 210 * b;
      const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(load128(p + 192)));
      __m512i isum[G];
      for (int g = 0; g < G; ++g) isum[g] = _mm512_setzero_si512();
      for (int n = 0; n < 2; ++n) {  // 128 elements: ql[64n..], qh[32n..]
        const __m512i ql = load512(p + 64 * n);
        const __m256i qh = load256(p + 128 + 32 * n);
        const __m512i z = join(qh, _mm256_srli_epi16(qh, 2));  // bits 0-1 (2-3) of qh for elements 0-31 (32-63)
        // Elements 0-63 (a) and 64-127 (c) of this half, as q in [-32, 31].
        const __m512i a = _mm512_sub_epi8(
            _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(_mm512_slli_epi16(z, 4), bits45)), off);
        const __m512i c = _mm512_sub_epi8(
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), _mm512_and_si512(z, bits45)), off);
        const __m256i part[4] = {_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1), _mm512_castsi512_si256(c),
                                 _mm512_extracti64x4_epi64(c, 1)};
        __m512i w16[4];
        for (int k = 0; k < 4; ++k)
          w16[k] = _mm512_mullo_epi16(_mm512_cvtepi8_epi16(part[k]), _mm512_permutexvar_epi16(idx.k16[4 * n + k], sc16));
        for (int g = 0; g < G; ++g) {
          const int16_t* xc = x.q16 + (t0 + g) * x.cols + 256 * b + 128 * n;
          const __m512i s01 = _mm512_add_epi32(_mm512_madd_epi16(w16[0], load512(xc)), _mm512_madd_epi16(w16[1], load512(xc + 32)));
          const __m512i s23 = _mm512_add_epi32(_mm512_madd_epi16(w16[2], load512(xc + 64)), _mm512_madd_epi16(w16[3], load512(xc + 96)));
          isum[g] = _mm512_add_epi32(isum[g], _mm512_add_epi32(s01, s23));
        }
      }
      const float d = h16(p + 208);
      for (int g = 0; g < G; ++g)
        acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[g]), _mm512_set1_ps(d * x.d[(t0 + g) * nb + b]), acc[g]);
    }
    for (int g = 0; g < G; ++g) result[g] = hsum512(acc[g]);
  });
}

// ---- Q8x32 activations: two 32-blocks per 512-bit step ------------------------------

// The scale of each int32 lane for blocks a (lanes 0-7) and b (lanes 8-15).
inline __m512 pair_scale(__m128 ab) {
  const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(ab));
}
// Half-float scales at p and p + stride as floats in lanes 0 and 1 (2 and 3 zero).
inline __m128 two_halves(const uint8_t* p, size_t stride) {
  return _mm_cvtph_ps(_mm_cvtsi32_si128(int(uint32_t(u16(p)) | uint32_t(u16(p + stride)) << 16)));
}
// Two floats in lanes 0 and 1 (movq: no alignment needed, unlike _mm_load_sd's double*).
inline __m128 two_floats(const float* p) { return _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }

// Q4_0, Q4_1, Q5_0, Q5_1: unsigned codes times activations; the offset (-8,
// -16) or the min enters through s = dx * sum(q_x), per block. Two blocks'
// codes unpacked at a time, once for the G rows.
template <int kBits, bool kMin>
void k_legacy(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  constexpr size_t kBytes = kBits == 4 ? (kMin ? 20 : 18) : (kMin ? 24 : 22);
  constexpr int kQh = kMin ? 4 : 2;                  // offset of qh (5-bit types)
  constexpr int kQs = kQh + (kBits == 5 ? 4 : 0);    // offset of the nibbles
  constexpr float kOffset = kBits == 4 ? 8.0f : 16.0f;
  const int64_t nb = x.cols / 32;
  const __m512i ones = _mm512_set1_epi16(1), low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
  rows_grouped<kMaxTwoTermGroup>(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    __m512 acc[G];
    __m128 corr[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps(), corr[g] = _mm_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      const uint8_t* p = r + kBytes * b;
      // [a lo nibbles, b lo, a hi, b hi] -> [a lo, a hi, b lo, b hi]: elements in order.
      const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(p + kQs)), load128(p + kBytes + kQs), 1);
      __m512i q = join(ab, _mm256_srli_epi16(ab, 4));
      q = _mm512_and_si512(_mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(3, 1, 2, 0)), low4);
      if constexpr (kBits == 5) {
        const __mmask64 hb = _cvtu64_mask64(uint64_t(u32(p + kQh)) | uint64_t(u32(p + kBytes + kQh)) << 32);
        q = _mm512_or_si512(q, _mm512_maskz_mov_epi8(hb, bit4));
      }
      const __m128 dw = two_halves(p, kBytes), cw = kMin ? two_halves(p + 2, kBytes) : dw;
      for (int g = 0; g < G; ++g) {
        const int t = t0 + g;
        const __m512i p32 = _mm512_madd_epi16(_mm512_maddubs_epi16(q, load512(x.q + t * x.cols + 32 * b)), ones);
        acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p32), pair_scale(_mm_mul_ps(dw, two_floats(x.d + t * nb + b))), acc[g]);
        corr[g] = _mm_fmadd_ps(cw, two_floats(x.s + t * nb + b), corr[g]);
      }
    }
    float sum[G], c[G];
    for (int g = 0; g < G; ++g) sum[g] = hsum512(acc[g]), c[g] = hsum128(corr[g]);
    if (b < nb) {  // the last block of an odd count
      const uint8_t* p = r + kBytes * b;
      const __m128i q16 = load128(p + kQs);
      __m256i q = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(q16), _mm_srli_epi16(q16, 4), 1),
                                   _mm256_set1_epi8(0x0F));
      if constexpr (kBits == 5) q = _mm256_or_si256(q, _mm256_maskz_mov_epi8(u32(p + kQh), _mm256_set1_epi8(0x10)));
      const float dw = h16(p), cw = kMin ? h16(p + 2) : dw;
      for (int g = 0; g < G; ++g) {
        const int t = t0 + g;
        const __m256i p32 =
            _mm256_madd_epi16(_mm256_maddubs_epi16(q, load256(x.q + t * x.cols + 32 * b)), _mm256_set1_epi16(1));
        sum[g] += dw * x.d[t * nb + b] * hsum256(_mm256_cvtepi32_ps(p32));
        c[g] += cw * x.s[t * nb + b];
      }
    }
    for (int g = 0; g < G; ++g) result[g] = kMin ? sum[g] + c[g] : sum[g] - kOffset * c[g];
  });
}

// ---- Q8x256 activations (K-quants) ------------------------------------------------------

// Q2_K and Q3_K: per 128 elements, the codes and their sub-blocks' scales
// unpacked once for the G rows.
void k_q2_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  const ScaleIdx<8> idx;
  const __m512i two = _mm512_set1_epi8(3);
  rows_grouped<kMaxTwoTermGroup>(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    Q8x256Row xr[G];
    __m512 acc[G];
    __m256 corr[G];
    for (int g = 0; g < G; ++g) xr[g] = q8x256_row(x, t0 + g), acc[g] = _mm512_setzero_ps(), corr[g] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + 84 * b;
      const __m128i s = load128(p);
      const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(s, _mm_set1_epi8(0x0F))));
      const __m256i mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0F)));
      __m512i isum[G];
      for (int g = 0; g < G; ++g) isum[g] = _mm512_setzero_si512();
      for (int n = 0; n < 2; ++n) {
        const __m256i q = load256(p + 16 + 32 * n);
        const __m512i z = join(q, _mm256_srli_epi16(q, 2));  // shifts 0 and 2: elements 0-63 of this half
        const __m512i u0 = _mm512_and_si512(z, two), u1 = _mm512_and_si512(_mm512_srli_epi16(z, 4), two);
        const __m512i s0 = _mm512_permutexvar_epi16(idx.k16[2 * n], sc16);
        const __m512i s1 = _mm512_permutexvar_epi16(idx.k16[2 * n + 1], sc16);
        for (int g = 0; g < G; ++g) {
          const int8_t* xc = xr[g].q + 256 * b + 128 * n;
          isum[g] = _mm512_add_epi32(isum[g], _mm512_madd_epi16(_mm512_maddubs_epi16(u0, load512(xc)), s0));
          isum[g] = _mm512_add_epi32(isum[g], _mm512_madd_epi16(_mm512_maddubs_epi16(u1, load512(xc + 64)), s1));
        }
      }
      const float d = h16(p + 80), dmin = h16(p + 82);
      for (int g = 0; g < G; ++g) {
        const float dx = xr[g].d[b];
        acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[g]), _mm512_set1_ps(d * dx), acc[g]);
        corr[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(mn, load256(xr[g].bsum16 + 16 * b))),
                                  _mm256_set1_ps(dmin * dx), corr[g]);
      }
    }
    for (int g = 0; g < G; ++g) result[g] = hsum512(acc[g]) - hsum256(corr[g]);
  });
}

void k_q3_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  const ScaleIdx<8> idx;
  const __m512i two = _mm512_set1_epi8(3), bit2 = _mm512_set1_epi8(4);
  rows_grouped<kMaxTwoTermGroup>(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    Q8x256Row xr[G];
    __m512 acc[G];
    for (int g = 0; g < G; ++g) xr[g] = q8x256_row(x, t0 + g), acc[g] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + 110 * b;
      // 16 six-bit scales (q3k_scale's packing), then minus 32.
      const __m256i sc = _mm256_cvtepi8_epi16(q3k_unpack(p + 96));
      const __m512i sc16 = _mm512_castsi256_si512(sc);
      // Codes u = q + 4 in [0, 7]: the offset comes off as 4 * sum(scale * sum16(x)).
      __m512i isum[G];
      for (int g = 0; g < G; ++g) {
        const __m256i offs = _mm256_slli_epi32(_mm256_madd_epi16(sc, load256(xr[g].bsum16 + 16 * b)), 2);
        isum[g] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(offs));
      }
      const __m256i hm = load256(p);
      const __m512i hz = join(hm, _mm256_srli_epi16(hm, 1));  // bit 4n + j of hz: the high bit of chunk j (j + 1)
      for (int n = 0; n < 2; ++n) {
        const __m256i q = load256(p + 32 + 32 * n);
        const __m512i z = join(q, _mm256_srli_epi16(q, 2));
        const __m512i u0 = _mm512_or_si512(_mm512_and_si512(z, two), _mm512_and_si512(move_bit(hz, 4 * n, 2), bit2));
        const __m512i u1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(z, 4), two),
                                           _mm512_and_si512(move_bit(hz, 4 * n + 2, 2), bit2));
        const __m512i s0 = _mm512_permutexvar_epi16(idx.k16[2 * n], sc16);
        const __m512i s1 = _mm512_permutexvar_epi16(idx.k16[2 * n + 1], sc16);
        for (int g = 0; g < G; ++g) {
          const int8_t* xc = xr[g].q + 256 * b + 128 * n;
          isum[g] = _mm512_add_epi32(isum[g], _mm512_madd_epi16(_mm512_maddubs_epi16(u0, load512(xc)), s0));
          isum[g] = _mm512_add_epi32(isum[g], _mm512_madd_epi16(_mm512_maddubs_epi16(u1, load512(xc + 64)), s1));
        }
      }
      const float d = h16(p + 108);
      for (int g = 0; g < G; ++g)
        acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[g]), _mm512_set1_ps(d * xr[g].d[b]), acc[g]);
    }
    for (int g = 0; g < G; ++g) result[g] = hsum512(acc[g]);
  });
}

// The tile kernels read their weights once each, in order, at a rate the
// hardware prefetchers alone did not keep up with (stories110M Q8_0: 150 ->
// 210 tok/s with this): they ask for the cache lines ~2 KB ahead themselves.
inline void prefetch(const uint8_t* p, size_t bytes) {
  for (size_t line = 0; line < bytes; line += 64) _mm_prefetch(reinterpret_cast<const char*>(p + line), _MM_HINT_T0);
}

// ---- Q8_0 in tiles of 16 rows (quant_matvec.h), AVX-512 VNNI ----------------------------

// G activation rows against NT consecutive tiles. Per block: the
// activations' byte planes are broadcast 4 bytes at a time (the unsigned
// operand) against [16 rows][4] weight bytes, so each int32 lane is one row's
// sum; then q16 . w = 256 * (sum_hi - 128 * sum(w)) + sum_lo, exact in int32
// (at most 32 * 128 * 128 * 256 + 32 * 255 * 128), and one float multiply-add
// per block for all 16 rows. Two tiles at a time share each broadcast and
// read two weight streams at once, which the memory system serves faster
// than one (stories110M Q8_0, back to back: 200 -> 230-237 tok/s).
template <int NT, int G>
__attribute__((target("avx512vnni"))) void q8_0_tiles_nt(const uint8_t* tile, size_t tile_bytes, int64_t nb,
                                                         const Acts& x, int t0, float* out, int64_t os) {
  __m512 acc[NT][G];
  for (int n = 0; n < NT; ++n)
    for (int g = 0; g < G; ++g) acc[n][g] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk[NT];
    for (int n = 0; n < NT; ++n) {
      blk[n] = tile + n * tile_bytes + TileQ8_0::kBytes * size_t(b);
      prefetch(blk[n] + 4 * TileQ8_0::kBytes, TileQ8_0::kBytes);
    }
    __m512i lo[NT][G], hi[NT][G];
    for (int n = 0; n < NT; ++n)
      for (int g = 0; g < G; ++g) lo[n][g] = hi[n][g] = _mm512_setzero_si512();
    for (int k = 0; k < 8; ++k) {
      __m512i wv[NT];
      for (int n = 0; n < NT; ++n) wv[n] = load512(blk[n] + TileQ8_0::kWeights + 64 * k);
      for (int g = 0; g < G; ++g) {
        const size_t at = size_t(t0 + g) * size_t(x.cols) + size_t(32 * b + 4 * k);
        const __m512i xl = _mm512_set1_epi32(int(u32(x.lo + at))), xh = _mm512_set1_epi32(int(u32(x.hi + at)));
        for (int n = 0; n < NT; ++n) {
          lo[n][g] = _mm512_dpbusd_epi32(lo[n][g], xl, wv[n]);
          hi[n][g] = _mm512_dpbusd_epi32(hi[n][g], xh, wv[n]);
        }
      }
    }
    for (int n = 0; n < NT; ++n) {
      const __m512 dw = _mm512_cvtph_ps(load256(blk[n] + TileQ8_0::kD));
      const __m512i bias = _mm512_slli_epi32(_mm512_cvtepi16_epi32(load256(blk[n] + TileQ8_0::kSum)), 7);  // 128 * sum(w)
      for (int g = 0; g < G; ++g) {
        const __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(_mm512_sub_epi32(hi[n][g], bias), 8), lo[n][g]);
        acc[n][g] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(x.d[(t0 + g) * nb + b])), acc[n][g]);
      }
    }
  }
  for (int n = 0; n < NT; ++n)
    for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + (t0 + g) * os + 16 * n, acc[n][g]);
}

// ---- Q4_K in tiles of 16 rows ------------------------------------------------------------

// G activation rows against one tile. Per sub-block of 32: the codes (0-15,
// the unsigned operand) against the activations' signed byte planes
// broadcast 4 at a time, so each int32 lane is one row's sum;
// 256 * sum_hi + sum_lo is the exact sub-block sum (below 2^24, so exact in
// float too), scaled by d * scale in float; the mins enter per row as
// dmin * sum(min * the activations' sum per 32).
template <int G>
__attribute__((target("avx512vnni"))) void q4_k_tile(const uint8_t* tile, int64_t nb, const Acts& x, int t0, float* out,
                                                     int64_t os) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 acc[G];
  for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = tile + TileQ4_K::kBytes * size_t(b);
    prefetch(blk + TileQ4_K::kBytes, TileQ4_K::kBytes);
    const __m512 d = _mm512_cvtph_ps(load256(blk + TileQ4_K::kD)), dmin = _mm512_cvtph_ps(load256(blk + TileQ4_K::kDmin));
    __m512 sums[G], mins[G];
    for (int g = 0; g < G; ++g) sums[g] = mins[g] = _mm512_setzero_ps();
    for (int s = 0; s < 8; ++s) {
      __m512i lo[G], hi[G];
      for (int g = 0; g < G; ++g) lo[g] = hi[g] = _mm512_setzero_si512();
      for (int h = 0; h < 4; ++h) {
        const __m512i v = load512(blk + TileQ4_K::kCodes + 256 * s + 64 * h);
        const __m512i c0 = _mm512_and_si512(v, low4), c1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        for (int g = 0; g < G; ++g) {
          const size_t at = size_t(t0 + g) * size_t(x.cols) + size_t(256 * b + 32 * s + 8 * h);
          lo[g] = _mm512_dpbusd_epi32(lo[g], c0, _mm512_set1_epi32(int(u32(x.lo + at))));
          lo[g] = _mm512_dpbusd_epi32(lo[g], c1, _mm512_set1_epi32(int(u32(x.lo + at + 4))));
          hi[g] = _mm512_dpbusd_epi32(hi[g], c0, _mm512_set1_epi32(int(u32(x.hi + at))));
          hi[g] = _mm512_dpbusd_epi32(hi[g], c1, _mm512_set1_epi32(int(u32(x.hi + at + 4))));
        }
      }
      const __m512 dsc = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load128(blk + TileQ4_K::kScales + 16 * s))));
      const __m512 mn = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load128(blk + TileQ4_K::kMins + 16 * s)));
      for (int g = 0; g < G; ++g) {
        const __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(hi[g], 8), lo[g]);
        sums[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), dsc, sums[g]);
        const float xs = float(x.sum32[(t0 + g) * (x.cols / 32) + 8 * b + s]);
        mins[g] = _mm512_fmadd_ps(mn, _mm512_set1_ps(xs), mins[g]);
      }
    }
    for (int g = 0; g < G; ++g) {
      const __m512 dx = _mm512_set1_ps(x.d[(t0 + g) * nb + b]);
      acc[g] = _mm512_fmadd_ps(_mm512_fnmadd_ps(dmin, mins[g], sums[g]), dx, acc[g]);
    }
  }
  for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + (t0 + g) * os, acc[g]);
}

void k_q4_k_tiles(const uint8_t* tiles, int64_t cols, int64_t tile_begin, int64_t tile_end, const Acts& x, float* out,
                  int64_t os) {
  const int64_t nb = cols / 256;
  tiles_grouped(tiles, size_t(nb) * TileQ4_K::kBytes, tile_begin, tile_end, x, out,
                [&]<int G>(const uint8_t* tile, int t0, float* o) { q4_k_tile<G>(tile, nb, x, t0, o, os); });
}

// ---- Q6_K in tiles of 16 rows ------------------------------------------------------------

// G activation rows against one tile. Per 16-element sub-block: the codes
// (q + 32 in 0-63, unpacked as Q6_K packs them; the unsigned operand)
// against the activations' signed byte planes broadcast 4 at a time; then
// sum(q * x) = 256 * sum_hi + sum_lo - 32 * sum16(x), at most
// 16 * 32 * 32639 < 2^24 in magnitude: exact in int32 and in float, scaled
// by d * scale in float.
template <int G>
__attribute__((target("avx512vnni"))) void q6_k_tile(const uint8_t* tile, int64_t nb, const Acts& x, int t0, float* out,
                                                     int64_t os) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  __m512 acc[G];
  for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = tile + TileQ6_K::kBytes * size_t(b);
    prefetch(blk + TileQ6_K::kBytes, TileQ6_K::kBytes);
    const __m512 d = _mm512_cvtph_ps(load256(blk + TileQ6_K::kD));
    __m512 sums[G];
    for (int g = 0; g < G; ++g) sums[g] = _mm512_setzero_ps();
    for (int k = 0; k < 16; ++k) {
      const uint8_t* sub = blk + TileQ6_K::kCodes + TileQ6_K::kSubBlock * k;
      const __m512i a = load512(sub), c = load512(sub + 64), q = load512(sub + 128);
      const __m512i codes[4] = {
          _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_and_si512(_mm512_slli_epi16(q, 4), bits45)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), low4), _mm512_and_si512(_mm512_slli_epi16(q, 2), bits45)),
          _mm512_or_si512(_mm512_and_si512(c, low4), _mm512_and_si512(q, bits45)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(c, 4), low4), _mm512_and_si512(_mm512_srli_epi16(q, 2), bits45)),
      };
      __m512i lo[G], hi[G];
      for (int g = 0; g < G; ++g) lo[g] = hi[g] = _mm512_setzero_si512();
      for (int e = 0; e < 4; ++e)
        for (int g = 0; g < G; ++g) {
          const size_t at = size_t(t0 + g) * size_t(x.cols) + size_t(256 * b + 16 * k + 4 * e);
          lo[g] = _mm512_dpbusd_epi32(lo[g], codes[e], _mm512_set1_epi32(int(u32(x.lo + at))));
          hi[g] = _mm512_dpbusd_epi32(hi[g], codes[e], _mm512_set1_epi32(int(u32(x.hi + at))));
        }
      const __m512 dsc = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load128(blk + TileQ6_K::kScales + 16 * k))));
      for (int g = 0; g < G; ++g) {
        const int32_t offset = 32 * x.sum16[(t0 + g) * (x.cols / 16) + 16 * b + k];
        const __m512i isum = _mm512_sub_epi32(_mm512_add_epi32(_mm512_slli_epi32(hi[g], 8), lo[g]), _mm512_set1_epi32(offset));
        sums[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), dsc, sums[g]);
      }
    }
    for (int g = 0; g < G; ++g) acc[g] = _mm512_fmadd_ps(sums[g], _mm512_set1_ps(x.d[(t0 + g) * nb + b]), acc[g]);
  }
  for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + (t0 + g) * os, acc[g]);
}

void k_q6_k_tiles(const uint8_t* tiles, int64_t cols, int64_t tile_begin, int64_t tile_end, const Acts& x, float* out,
                  int64_t os) {
  const int64_t nb = cols / 256;
  tiles_grouped(tiles, size_t(nb) * TileQ6_K::kBytes, tile_begin, tile_end, x, out,
                [&]<int G>(const uint8_t* tile, int t0, float* o) { q6_k_tile<G>(tile, nb, x, t0, o, os); });
}

void k_q8_0_tiles(const uint8_t* tiles, int64_t cols, int64_t tile_begin, int64_t tile_end, const Acts& x, float* out,
                  int64_t os) {
  const int64_t nb = cols / 32;
  tiles_in_pairs(tiles, size_t(nb) * TileQ8_0::kBytes, tile_begin, tile_end, x, out,
                 [&]<int NT, int G>(const uint8_t* tile, size_t tb, int t0, float* o) {
                   q8_0_tiles_nt<NT, G>(tile, tb, nb, x, t0, o, os);
                 });
}

bool has_vnni() {
  static const bool vnni = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") != 0;
  }();
  return vnni;
}

// Q4_0 and Q4_1: the AVX2 forms, which measured as fast or faster on Zen 4 (see the top).
constexpr Kernel k_q4_0 = nullptr;
constexpr Kernel k_q4_1 = nullptr;

#include "core/cpu/quant_kernel_table.inc"

}  // namespace

TileKernel avx512_tile_kernel(QuantType t) {
  if (!has_vnni()) return nullptr;
  if (t == QuantType::Q8_0) return k_q8_0_tiles;
  if (t == QuantType::Q4_K) return k_q4_k_tiles;
  if (t == QuantType::Q6_K) return k_q6_k_tiles;
  return nullptr;
}

Kernel avx512_kernel(QuantType t) {
  const Kernel own = kernel_for(t);
  return own ? own : avx2_kernel(t);
}

}  // namespace h2o::cpu::kern
