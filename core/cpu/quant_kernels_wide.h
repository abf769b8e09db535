#pragma once
// Internal to the x86 kernel sets: the row kernels whose shape does not
// depend on the vector width, written once over the width (Wide<256> for
// quant_kernels_avx2.cpp, Wide<512> for quant_kernels_avx512.cpp). Each set
// gets them under the names its table (quant_kernel_table.inc) gives them
// (k_f32, k_f16, k_bf16, k_q8_0, k_q45_k; at the end), at the width of the
// instruction set it is compiled for. Everything here has internal linkage,
// so each set's translation unit compiles its own copy for its own
// instruction set (see quant_kernels.h); include it from those two files only.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/cpu/quant_kernels.h"
#include "core/cpu/quant_kernels_x86.h"
#include "core/cpu/quant_rows.h"

namespace h2o::cpu::kern {
namespace {

// A width's registers: floats, and integers of the same bits. (Not
// std::conditional_t, whose template arguments would drop the vector types'
// attributes.)
template <int kBits>
struct Registers;
template <>
struct Registers<256> {
  using F = __m256;
  using I = __m256i;
};
template <>
struct Registers<512> {
  using F = __m512;
  using I = __m512i;
};

// A width's operations, the 256- and 512-bit forms side by side (the other
// width's form is a discarded branch: never compiled for a set that lacks it).
template <int kBits>
struct Wide {
  static constexpr bool k512 = kBits == 512;
  using F = typename Registers<kBits>::F;
  using I = typename Registers<kBits>::I;
  static constexpr int kLanes = kBits / 32;
  // 32 int16 weights, as the widening of 32 bytes gives them: one register or two.
  struct W32 {
    static constexpr int kParts = 512 / kBits;
    I part[kParts];
  };
  // How far ahead the float kernels ask for their weights. At 512 bits they
  // read each weight once, in order, faster than the hardware prefetchers
  // alone kept up with (F16 decode 78 -> 100 tok/s on stories110M); at 256
  // bits asking cost 10-20 % (Zen 4, one activation row), so they do not.
  static constexpr int kPrefetchAhead = k512 ? 2048 : 0;

  // v as it is, in a register the compiler must keep: left to itself, GCC 12
  // loads a weight vector again for every activation row it meets (three
  // rows: 12 loads per 6 multiply-adds, a third of the speed of four rows),
  // as it may when the value is a plain load.
  template <class R>
  static R held(R v) {
    asm("" : "+v"(v));
    return v;
  }

  static F zero() { return F{}; }
  static I zero_i() { return I{}; }
  static F add(F a, F b) { if constexpr (k512) return _mm512_add_ps(a, b); else return _mm256_add_ps(a, b); }
  static I add_i(I a, I b) { if constexpr (k512) return _mm512_add_epi32(a, b); else return _mm256_add_epi32(a, b); }
  static F fmadd(F a, F b, F c) { if constexpr (k512) return _mm512_fmadd_ps(a, b, c); else return _mm256_fmadd_ps(a, b, c); }
  static F set1(float v) { if constexpr (k512) return _mm512_set1_ps(v); else return _mm256_set1_ps(v); }
  static F to_float(I v) { if constexpr (k512) return _mm512_cvtepi32_ps(v); else return _mm256_cvtepi32_ps(v); }
  static F load(const float* p) { if constexpr (k512) return _mm512_loadu_ps(p); else return _mm256_loadu_ps(p); }
  static I load_i(const void* p) { if constexpr (k512) return _mm512_loadu_si512(p); else return load256(p); }
  // int16 pairs multiplied and summed into int32 lanes (pmaddwd).
  static I madd(I a, I b) { if constexpr (k512) return _mm512_madd_epi16(a, b); else return _mm256_madd_epi16(a, b); }
  static float hsum(F v) {
    if constexpr (k512)
      return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    else
      return hsum256(v);
  }

  // kLanes weights of a row from element i, as floats.
  static F f32_at(const uint8_t* r, int64_t i) { return load(reinterpret_cast<const float*>(r) + i); }
  static F f16_at(const uint8_t* r, int64_t i) {
    if constexpr (k512) return _mm512_cvtph_ps(load256(r + 2 * i)); else return _mm256_cvtph_ps(load128(r + 2 * i));
  }
  static F bf16_at(const uint8_t* r, int64_t i) {
    if constexpr (k512) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(r + 2 * i)), 16));
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(r + 2 * i)), 16));
  }
  // The 32 signed bytes at p, widened.
  static W32 widen_i8(const uint8_t* p) {
    if constexpr (k512) return {_mm512_cvtepi8_epi16(load256(p))};
    else return {_mm256_cvtepi8_epi16(load128(p)), _mm256_cvtepi8_epi16(load128(p + 16))};
  }
  // The 32 unsigned bytes of v, widened and times s.
  static W32 widen_u8(__m256i v, int16_t s) {
    if constexpr (k512) {
      return {_mm512_mullo_epi16(_mm512_cvtepu8_epi16(v), _mm512_set1_epi16(s))};
    } else {
      const __m256i scale = _mm256_set1_epi16(s);
      return {_mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(v)), scale),
              _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(v, 1)), scale)};
    }
  }
};

// ---- float activations ---------------------------------------------------------------

// G activation rows against one weight row: each 2 * kLanes weights are
// widened once and multiplied into every row's two accumulators (per row, the
// same sums in the same order as one row alone). Load reads kLanes weights
// from element i of a row, One a single one (the tail); both are template
// arguments, so that they inline (through a function pointer they did not,
// at a quarter of the speed).
template <class V, int G, int kBytes, auto Load, auto One>
void wide_dot_f(const uint8_t* r, const float* x0, int64_t n, float* result) {
  constexpr int L = V::kLanes;
  typename V::F a0[G], a1[G];
  for (int g = 0; g < G; ++g) a0[g] = a1[g] = V::zero();
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    if constexpr (V::kPrefetchAhead > 0)
      for (int line = 0; line < 2 * L * kBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(r) + kBytes * i + V::kPrefetchAhead + line, _MM_HINT_T0);
    const typename V::F w0 = V::held(Load(r, i)), w1 = V::held(Load(r, i + L));
    for (int g = 0; g < G; ++g) {
      a0[g] = V::fmadd(w0, V::load(x0 + g * n + i), a0[g]);
      a1[g] = V::fmadd(w1, V::load(x0 + g * n + i + L), a1[g]);
    }
  }
  // What is left: at most one block of L, then fewer than L elements (only
  // float32 rows have a length that is not a multiple of 32). Kept apart
  // from the reduction, so that the accumulators stay in registers.
  if (i + L <= n) {
    const typename V::F w0 = Load(r, i);
    for (int g = 0; g < G; ++g) a0[g] = V::fmadd(w0, V::load(x0 + g * n + i), a0[g]);
    i += L;
  }
  for (int g = 0; g < G; ++g) result[g] = V::hsum(V::add(a0[g], a1[g]));
  if (i < n)
    for (int g = 0; g < G; ++g)
      for (int64_t j = i; j < n; ++j) result[g] += One(r, j) * x0[g * n + j];
}

// One float kernel per weight type.
template <class V, int kBytes, auto Load, auto One>
void wide_float_rows(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  rows_grouped(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    wide_dot_f<V, G, kBytes, Load, One>(r, x.f + t0 * x.cols, x.cols, result);
  });
}

inline float f32_one(const uint8_t* p, int64_t i) {
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}
inline float f16_one(const uint8_t* p, int64_t i) { return h16(p + 2 * i); }
inline float bf16_one(const uint8_t* p, int64_t i) {
  const uint32_t bits = uint32_t(u16(p + 2 * i)) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

template <class V>
void wide_f32(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  wide_float_rows<V, 4, V::f32_at, f32_one>(w, rb, rows, x, out, os);
}
template <class V>
void wide_f16(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  wide_float_rows<V, 2, V::f16_at, f16_one>(w, rb, rows, x, out, os);
}
template <class V>
void wide_bf16(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  wide_float_rows<V, 2, V::bf16_at, bf16_one>(w, rb, rows, x, out, os);
}

// ---- Q16 activations: widened weights, pmaddwd into int32 -----------------------------

// The int32 lane sums of 32 widened weights against 32 int16 activations at x.
template <class V>
typename V::I dot32(const typename V::W32& w, const int16_t* x) {
  constexpr int kParts = V::W32::kParts;
  typename V::I s = V::madd(w.part[0], V::load_i(x));
  for (int k = 1; k < kParts; ++k) s = V::add_i(s, V::madd(w.part[k], V::load_i(x + 32 / kParts * k)));
  return s;
}

// Q8_0: each block's 32 weights are widened once for the G rows; two chains
// of accumulators (even and odd blocks) so that FMA latency does not bind.
template <class V>
void wide_q8_0(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 32;
  rows_grouped(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    typename V::F acc[2][G];
    for (int g = 0; g < G; ++g) acc[0][g] = acc[1][g] = V::zero();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + 34 * b;
      const typename V::W32 w16 = V::widen_i8(p + 2);
      const float dw = h16(p);
      for (int g = 0; g < G; ++g) {
        const typename V::I prod = dot32<V>(w16, x.q16 + (t0 + g) * x.cols + 32 * b);
        acc[b & 1][g] = V::fmadd(V::to_float(prod), V::set1(dw * x.d[(t0 + g) * nb + b]), acc[b & 1][g]);
      }
    }
    for (int g = 0; g < G; ++g) result[g] = V::hsum(V::add(acc[0][g], acc[1][g]));
  });
}

// Q4_K and Q5_K: per 32-element sub-block, codes (with Q5_K's fifth bit)
// widened to int16 and multiplied by the sub-block scale once for the G rows
// (16 products per int32 lane per super-block at 512 bits, 32 at 256: below
// 2^31, quant_matvec.h); the mins enter per row as min times the
// activations' sum per 32, in a sum of their own.
template <class V, bool kQ5>
void wide_q45_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  constexpr size_t kBytes = kQ5 ? 176 : 144;
  constexpr int kQs = kQ5 ? 48 : 16;
  const int64_t nb = x.cols / 256;
  const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  // Bit `from` of every byte of qh to bit 4 (other bits masked by the caller).
  const auto fifth = [](__m256i v, int from) {
    return from >= 4 ? _mm256_srli_epi16(v, from - 4) : _mm256_slli_epi16(v, 4 - from);
  };
  rows_grouped(w, rb, rows, x, out, os, [&]<int G>(const uint8_t* r, int t0, float* result) {
    typename V::F acc[G];
    __m256 corr[G];
    for (int g = 0; g < G; ++g) acc[g] = V::zero(), corr[g] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + kBytes * b;
      uint64_t sc, mn;
      k4_unpack(p + 4, &sc, &mn);
      const __m256i qh = kQ5 ? load256(p + 16) : _mm256_setzero_si256();
      typename V::I isum[G];
      for (int g = 0; g < G; ++g) isum[g] = V::zero_i();
      for (int j = 0; j < 4; ++j) {  // 64 elements: sub-blocks 2j (low nibbles) and 2j + 1 (high)
        const __m256i q = load256(p + kQs + 32 * j);
        __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if constexpr (kQ5) {
          lo = _mm256_or_si256(lo, _mm256_and_si256(fifth(qh, 2 * j), bit4));
          hi = _mm256_or_si256(hi, _mm256_and_si256(fifth(qh, 2 * j + 1), bit4));
        }
        const typename V::W32 wlo = V::widen_u8(lo, int16_t((sc >> (16 * j)) & 0xFF));
        const typename V::W32 whi = V::widen_u8(hi, int16_t((sc >> (16 * j + 8)) & 0xFF));
        for (int g = 0; g < G; ++g) {
          const int16_t* xc = x.q16 + (t0 + g) * x.cols + 256 * b + 64 * j;
          isum[g] = V::add_i(isum[g], V::add_i(dot32<V>(wlo, xc), dot32<V>(whi, xc + 32)));
        }
      }
      const float d = h16(p), dmin = h16(p + 2);
      const __m256i mins = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(mn)));
      for (int g = 0; g < G; ++g) {
        const float dx = x.d[(t0 + g) * nb + b];
        const __m256i m = _mm256_mullo_epi32(mins, load256(x.sum32 + (t0 + g) * (x.cols / 32) + 8 * b));
        acc[g] = V::fmadd(V::to_float(isum[g]), V::set1(d * dx), acc[g]);
        corr[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(dmin * dx), corr[g]);
      }
    }
    for (int g = 0; g < G; ++g) result[g] = V::hsum(acc[g]) - hsum256(corr[g]);
  });
}

// The kernels above under the names a set's table gives them, at the width
// of the instruction set this file is compiled for (core/cpu/CMakeLists.txt
// builds the AVX2 set with -mno-avx512f).
#ifdef __AVX512F__
using SetWidth = Wide<512>;
#else
using SetWidth = Wide<256>;
#endif
constexpr Kernel k_f32 = wide_f32<SetWidth>;
constexpr Kernel k_f16 = wide_f16<SetWidth>;
constexpr Kernel k_bf16 = wide_bf16<SetWidth>;
constexpr Kernel k_q8_0 = wide_q8_0<SetWidth>;
template <bool kQ5>
constexpr Kernel k_q45_k = wide_q45_k<SetWidth, kQ5>;

}  // namespace
}  // namespace h2o::cpu::kern
