#pragma once
// Internal to the x86 kernel sets (quant_kernels_avx2.cpp,
// quant_kernels_avx512.cpp): the loads and sums both use. Everything here has
// internal linkage (an unnamed namespace), so each set's translation unit
// keeps its own copy compiled for its own instruction set; with external
// linkage the linker could keep the AVX-512 copy for the AVX2 path too (see
// quant_kernels.h). Include it from those two files only.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace h2o::cpu::kern {
namespace {

inline uint16_t u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float h16(const uint8_t* p) { return _cvtsh_ss(u16(p)); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline float hsum128(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  v = _mm_add_ss(v, _mm_movehdup_ps(v));
  return _mm_cvtss_f32(v);
}
inline float hsum256(__m256 v) { return hsum128(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))); }

// 12 bytes into lanes 0-2 (no read past them: the Q3_K scales end 2 bytes before their block).
inline __m128i load12(const uint8_t* p) {
  return _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), int(u32(p + 8)), 2);
}
// The 16 Q3_K scales (q3k_scale's packing) as int8 in [-32, 31]: low nibbles
// from words a0 and a1 (scales 8-15: their high nibbles), top two bits from a2.
inline __m128i q3k_unpack(const uint8_t* s12) {
  const __m128i v = load12(s12);
  const __m128i lo = _mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 1, 0)), _mm_setr_epi32(0, 0, 4, 4));
  const __m128i a2 = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 2, 2));
  const __m128i hi = _mm_sllv_epi32(_mm_srlv_epi32(a2, _mm_setr_epi32(0, 0, 0, 2)), _mm_setr_epi32(4, 2, 0, 0));
  const __m128i u = _mm_or_si128(_mm_and_si128(lo, _mm_set1_epi8(0x0F)), _mm_and_si128(hi, _mm_set1_epi8(0x30)));
  return _mm_sub_epi8(u, _mm_set1_epi8(32));
}

}  // namespace
}  // namespace h2o::cpu::kern
