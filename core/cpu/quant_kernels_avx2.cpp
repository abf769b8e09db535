// AVX2 (+FMA, F16C) row kernels. Compiled with -mavx2 -mfma -mf16c
// -mno-avx512f whatever the project's flags (so that -march=native on an
// AVX-512 machine cannot slip EVEX instructions in), and called only when the
// CPU reports AVX2, FMA and F16C (quant_matvec.cpp). The AVX-512 path calls
// some of these too, where no 512-bit form measured faster. The float, Q8_0,
// Q4_K and Q5_K kernels are the width-generic ones (quant_kernels_wide.h) at
// 256 bits. Everything but avx2_kernel() has internal linkage (see
// quant_kernels.h).
//
// 8-bit activations (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K): byte products go
// through maddubs (unsigned x signed bytes, adjacent pairs summed to int16)
// and madd (int16 pairs to int32, times the sub-block scale or 1). maddubs
// saturates at +-32767, so its unsigned operand is the weight code (at most
// 31) and the signed one the activation (|q| <= 127): at most
// 2 * 31 * 127 = 7874 per pair, never saturated. 16-bit activations: see
// quant_matvec.h.
#include <immintrin.h>

#include <cstring>

#include "core/cpu/quant_kernels.h"
#include "core/cpu/quant_kernels_wide.h"
#include "core/cpu/quant_kernels_x86.h"
#include "core/cpu/quant_rows.h"

namespace h2o::cpu::kern {
namespace {

// 16 bytes as 32 four-bit codes in element order: low nibbles, then high.
inline __m256i nibbles(__m128i q) {
  return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1),
                          _mm256_set1_epi8(0x0F));
}
// Bit i of `bits` -> byte i: 0xFF if set, else 0.
inline __m256i bits_to_bytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(int(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}
// pshufb patterns over 8 int16 scales held in both 128-bit lanes: two[j]:
// lanes 0-7 take scale 2j, lanes 8-15 scale 2j + 1 (two 16-element
// sub-blocks per register: Q2_K, Q3_K).
struct ScalePick {
  __m256i two[4];
  ScalePick() {
    for (int j = 0; j < 4; ++j)
      two[j] = _mm256_setr_m128i(_mm_set1_epi16(int16_t((4 * j + 1) << 8 | (4 * j))),
                                 _mm_set1_epi16(int16_t((4 * j + 3) << 8 | (4 * j + 2))));
  }
};
// Moves bit `from` of every byte to bit `to` (< 8); see quant_kernels_avx512.cpp.
inline __m256i move_bit(__m256i v, int from, int to) {
  return from >= to ? _mm256_srli_epi16(v, from - to) : _mm256_slli_epi16(v, to - from);
}

// ---- Q16 activations (Q6_K; Q8_0, Q4_K and Q5_K: quant_kernels_wide.h) -------------------

// Q6_K: per 16-element sub-block, codes minus 32 widened to int16 and
// multiplied by the sub-block scale once for the G rows. Each half of a
// super-block (8 pmaddwd, 16 products per int32 lane) is converted to float
// on its own: a whole super-block's 32 products per lane could pass 2^31.
void k_q6_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
  rows_grouped(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + 210 * b;
      const int8_t* sc = reinterpret_cast<const int8_t*>(p + 192);
      const float d = h16(p + 208);
      for (int n = 0; n < 2; ++n) {  // 128 elements
        const __m256i ql0 = load256(p + 64 * n), ql1 = load256(p + 64 * n + 32);
        const __m256i qh = load256(p + 128 + 32 * n);
        // Elements 32j .. 32j + 31 of this half, as q in [-32, 31].
        const __m256i v[4] = {
            _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)),
            _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, bits45)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)),
        };
        __m256i w16[8];
        for (int j = 0; j < 4; ++j) {
          const __m256i q = _mm256_sub_epi8(v[j], off);
          w16[2 * j] = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)),
                                          _mm256_set1_epi16(sc[8 * n + 2 * j]));
          w16[2 * j + 1] = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)),
                                              _mm256_set1_epi16(sc[8 * n + 2 * j + 1]));
        }
        for (int g = 0; g < G; ++g) {
          const int16_t* xc = x.q16 + (t0 + g) * x.cols + 256 * b + 128 * n;
          __m256i isum = _mm256_setzero_si256();
          for (int k = 0; k < 8; ++k) isum = _mm256_add_epi32(isum, _mm256_madd_epi16(w16[k], load256(xc + 16 * k)));
          acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * x.d[(t0 + g) * nb + b]), acc[g]);
        }
      }
    }
    for (int g = 0; g < G; ++g) result[g] = hsum256(acc[g]);
  });
}

// ---- Q8x32 activations: one 32-block per step -----------------------------------------

// Q4_0, Q4_1, Q5_0, Q5_1: each block's codes unpacked once for the G rows.
template <int kBits, bool kMin>
void k_legacy(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  constexpr size_t kBytes = kBits == 4 ? (kMin ? 20 : 18) : (kMin ? 24 : 22);
  constexpr int kQh = kMin ? 4 : 2;
  constexpr int kQs = kQh + (kBits == 5 ? 4 : 0);
  constexpr float kOffset = kBits == 4 ? 8.0f : 16.0f;
  const int64_t nb = x.cols / 32;
  const __m256i ones = _mm256_set1_epi16(1), bit4 = _mm256_set1_epi8(0x10);
  rows_grouped<kMaxTwoTermGroup>(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    // Per row two chains of accumulators (even and odd blocks), so that one
    // block's FMA latency does not hold up the next (named arrays: indexed
    // by b & 1 they were kept in memory and ran at half speed).
    __m256 acc0[G], acc1[G];
    float corr0[G], corr1[G];
    for (int g = 0; g < G; ++g) acc0[g] = acc1[g] = _mm256_setzero_ps(), corr0[g] = corr1[g] = 0;
    auto block = [&](int64_t b, __m256* acc, float* corr) {
      const uint8_t* p = r + kBytes * b;
      __m256i q = nibbles(load128(p + kQs));
      if constexpr (kBits == 5) q = _mm256_or_si256(q, _mm256_and_si256(bits_to_bytes(u32(p + kQh)), bit4));
      const float dw = h16(p), cw = kMin ? h16(p + 2) : dw;
      for (int g = 0; g < G; ++g) {
        const int t = t0 + g;
        const __m256i p32 = _mm256_madd_epi16(_mm256_maddubs_epi16(q, load256(x.q + t * x.cols + 32 * b)), ones);
        acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), _mm256_set1_ps(dw * x.d[t * nb + b]), acc[g]);
        corr[g] += cw * x.s[t * nb + b];
      }
    };
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      block(b, acc0, corr0);
      block(b + 1, acc1, corr1);
    }
    if (b < nb) block(b, acc0, corr0);
    for (int g = 0; g < G; ++g) {
      const float sum = hsum256(_mm256_add_ps(acc0[g], acc1[g])), c = corr0[g] + corr1[g];
      result[g] = kMin ? sum + c : sum - kOffset * c;
    }
  });
}

// ---- Q8x256 activations (K-quants) ------------------------------------------------------

// Q2_K and Q3_K: per 32 elements, the codes and their two sub-blocks' scales
// unpacked once for the G rows.
void k_q2_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  const ScalePick pick;
  const __m256i two = _mm256_set1_epi8(3);
  rows_grouped<kMaxTwoTermGroup>(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    Q8x256Row xr[G];
    __m256 acc[G], corr[G];
    for (int g = 0; g < G; ++g) xr[g] = q8x256_row(x, t0 + g), acc[g] = corr[g] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + 84 * b;
      const __m128i s4 = load128(p);  // scale (low nibble) and min (high) per 16 elements
      const __m128i sc = _mm_and_si128(s4, _mm_set1_epi8(0x0F));
      __m256i isum[G];
      for (int g = 0; g < G; ++g) isum[g] = _mm256_setzero_si256();
      for (int n = 0; n < 2; ++n) {
        const __m256i s8 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(n ? _mm_srli_si128(sc, 8) : sc));
        const __m256i q = load256(p + 16 + 32 * n);
        for (int j = 0; j < 4; ++j) {
          const __m256i v = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), two);
          const __m256i scale = _mm256_shuffle_epi8(s8, pick.two[j]);
          for (int g = 0; g < G; ++g) {
            const __m256i prod = _mm256_maddubs_epi16(v, load256(xr[g].q + 256 * b + 128 * n + 32 * j));
            isum[g] = _mm256_add_epi32(isum[g], _mm256_madd_epi16(prod, scale));
          }
        }
      }
      const float d = h16(p + 80), dmin = h16(p + 82);
      const __m256i mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s4, 4), _mm_set1_epi8(0x0F)));
      for (int g = 0; g < G; ++g) {
        const float dx = xr[g].d[b];
        acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[g]), _mm256_set1_ps(d * dx), acc[g]);
        corr[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(mn, load256(xr[g].bsum16 + 16 * b))),
                                  _mm256_set1_ps(dmin * dx), corr[g]);
      }
    }
    for (int g = 0; g < G; ++g) result[g] = hsum256(acc[g]) - hsum256(corr[g]);
  });
}

void k_q3_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  const ScalePick pick;
  const __m256i two = _mm256_set1_epi8(3), bit2 = _mm256_set1_epi8(4);
  rows_grouped<kMaxTwoTermGroup>(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    Q8x256Row xr[G];
    __m256 acc[G];
    for (int g = 0; g < G; ++g) xr[g] = q8x256_row(x, t0 + g), acc[g] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + 110 * b;
      const __m128i sc = q3k_unpack(p + 96);
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
      // Codes u = q + 4 in [0, 7]: the offset comes off as 4 * sum(scale * sum16(x)).
      __m256i isum[G];
      for (int g = 0; g < G; ++g)
        isum[g] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                   _mm256_slli_epi32(_mm256_madd_epi16(sc16, load256(xr[g].bsum16 + 16 * b)), 2));
      const __m256i hm = load256(p);
      for (int n = 0; n < 2; ++n) {
        const __m256i s8 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(n ? _mm_srli_si128(sc, 8) : sc));
        const __m256i q = load256(p + 32 + 32 * n);
        for (int j = 0; j < 4; ++j) {
          const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), two),
                                            _mm256_and_si256(move_bit(hm, 4 * n + j, 2), bit2));
          const __m256i scale = _mm256_shuffle_epi8(s8, pick.two[j]);
          for (int g = 0; g < G; ++g) {
            const __m256i prod = _mm256_maddubs_epi16(u, load256(xr[g].q + 256 * b + 128 * n + 32 * j));
            isum[g] = _mm256_add_epi32(isum[g], _mm256_madd_epi16(prod, scale));
          }
        }
      }
      const float d = h16(p + 108);
      for (int g = 0; g < G; ++g)
        acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[g]), _mm256_set1_ps(d * xr[g].d[b]), acc[g]);
    }
    for (int g = 0; g < G; ++g) result[g] = hsum256(acc[g]);
  });
}

constexpr Kernel k_q4_0 = k_legacy<4, false>;
constexpr Kernel k_q4_1 = k_legacy<4, true>;

#include "core/cpu/quant_kernel_table.inc"

}  // namespace

Kernel avx2_kernel(QuantType t) {
  return kernel_for(t);
}

}  // namespace h2o::cpu::kern
