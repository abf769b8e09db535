#include "core/cpu/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/model/dtype.h"

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace h2o::kvq {

Scale scale_of(float lo, float hi, int bits) {
  Scale out;
  out.m = f32_to_f16(lo);
  out.s = f32_to_f16((hi - f16_to_f32(out.m)) / float((1 << bits) - 1));
  return out;
}

uint8_t code_of(float x, Scale scale, int bits) {
  const float s = f16_to_f32(scale.s);
  if (s == 0.0f) return 0;
  // nearbyint rounds half to even in the default rounding mode.
  const float q = std::nearbyint((x - f16_to_f32(scale.m)) / s);
  return uint8_t(std::clamp(q, 0.0f, float((1 << bits) - 1)));
}

float read_back(uint8_t code, Scale scale) { return std::fma(float(code), f16_to_f32(scale.s), f16_to_f32(scale.m)); }

void pack_row(const uint8_t* codes, int n, int bits, uint8_t* out) {
  const int per = 8 / bits, stride = n / per;
  for (int j = 0; j < stride; ++j) {
    uint8_t byte = 0;
    for (int k = 0; k < per; ++k) byte |= uint8_t(codes[j + k * stride] << (k * bits));
    out[j] = byte;
  }
}

void unpack_row(const uint8_t* packed, int n, int bits, uint8_t* codes) {
  const int per = 8 / bits, stride = n / per, mask = (1 << bits) - 1;
  for (int k = 0; k < per; ++k)
    for (int j = 0; j < stride; ++j) codes[j + k * stride] = uint8_t((packed[j] >> (k * bits)) & mask);
}

float half_to_float(uint16_t h) {
#ifdef __F16C__
  return _cvtsh_ss(h);
#else
  return f16_to_f32(h);
#endif
}

// Eight at a time with the F16C instructions where the build targets them
// (the same values: both round to nearest even), one at a time otherwise.
void f16_to_f32_row(const uint16_t* in, int n, float* out) {
  int i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

void f32_to_f16_row(const float* in, int n, uint16_t* out) {
  int i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

void quantize_key_group(const float* rows, int tokens, int n, int bits, Scale* scales, uint8_t* packed,
                        int row_stride) {
  std::vector<uint8_t> codes(size_t(tokens) * n);
  for (int c = 0; c < n; ++c) {
    float lo = rows[c], hi = rows[c];
    for (int t = 1; t < tokens; ++t) {
      lo = std::min(lo, rows[size_t(t) * n + c]);
      hi = std::max(hi, rows[size_t(t) * n + c]);
    }
    scales[c] = scale_of(lo, hi, bits);
    for (int t = 0; t < tokens; ++t) codes[size_t(t) * n + c] = code_of(rows[size_t(t) * n + c], scales[c], bits);
  }
  for (int t = 0; t < tokens; ++t) pack_row(&codes[size_t(t) * n], n, bits, packed + size_t(t) * row_stride);
}

void quantize_value_row(const float* row, int n, int group, int bits, Scale* scales, uint8_t* packed) {
  std::vector<uint8_t> codes(static_cast<size_t>(n));
  for (int g = 0; g < n / group; ++g) {
    const float* x = row + g * group;
    const auto [lo, hi] = std::minmax_element(x, x + group);
    scales[g] = scale_of(*lo, *hi, bits);
    for (int c = 0; c < group; ++c) codes[size_t(g * group + c)] = code_of(x[c], scales[g], bits);
  }
  pack_row(codes.data(), n, bits, packed);
}

namespace {
// Eight codes at a time (GCC vector extensions: AVX2 or AVX-512 under
// -march=native, SSE otherwise): widen eight bytes, shift the plane down,
// mask, convert, one fused multiply-add each.
typedef uint8_t u8x8 __attribute__((vector_size(8)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef float f32x8 __attribute__((vector_size(32)));

template <class V>
inline V load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline f32x8 fma8(f32x8 a, f32x8 b, f32x8 c) {
#if defined(__AVX2__) && defined(__FMA__)
  return f32x8(_mm256_fmadd_ps(__m256(a), __m256(b), __m256(c)));
#else
  f32x8 r;
  for (int i = 0; i < 8; ++i) r[i] = std::fma(a[i], b[i], c[i]);
  return r;
#endif
}

// Eight codes of plane `shift / Bits` from eight packed bytes, as floats.
template <int Bits>
inline f32x8 codes8(const uint8_t* bytes, int shift) {
  constexpr int mask = (1 << Bits) - 1;
#ifdef __AVX2__
  // One widening load (vpmovzxbd); the generic conversion below compiles to byte-by-byte inserts.
  const __m256i wide = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)));
  const __m256i codes = _mm256_and_si256(_mm256_srli_epi32(wide, shift), _mm256_set1_epi32(mask));
  return f32x8(_mm256_cvtepi32_ps(codes));
#else
  return __builtin_convertvector((__builtin_convertvector(load<u8x8>(bytes), i32x8) >> shift) & mask, f32x8);
#endif
}

// out[j] = code_j * s + m for the codes of plane k of bytes [first, end),
// with m and s per channel (m + j, s + j) or one pair for all (Step = 0).
template <int Bits, int Step>
inline void read_plane(const uint8_t* packed, int first, int end, int k, const float* m, const float* s, float* out) {
  constexpr int mask = (1 << Bits) - 1;
  int j = first;
  for (; j + 8 <= end; j += 8) {
    const f32x8 sv = Step ? load<f32x8>(s + j) : f32x8{} + s[0];
    const f32x8 mv = Step ? load<f32x8>(m + j) : f32x8{} + m[0];
    const f32x8 r = fma8(codes8<Bits>(packed + j, k * Bits), sv, mv);
    std::memcpy(out + j, &r, sizeof r);
  }
  for (; j < end; ++j) out[j] = std::fma(float((packed[j] >> (k * Bits)) & mask), s[Step * j], m[Step * j]);
}

template <int Bits>
void read_row_bits(const uint8_t* packed, int n, const float* m, const float* s, float* out) {
  constexpr int per = 8 / Bits;
  const int stride = n / per;
  for (int k = 0; k < per; ++k)
    read_plane<Bits, 1>(packed, 0, stride, k, m + k * stride, s + k * stride, out + k * stride);
}

template <int Bits>
void read_value_row_bits(const uint8_t* packed, int n, int group, const Scale* scales, float* out) {
  constexpr int per = 8 / Bits;
  const int stride = n / per;
  for (int k = 0; k < per; ++k)
    for (int j = 0; j < stride;) {  // the plane's channels k*stride + j, run by run of `group`
      const int c = k * stride + j, run = c / group;
      const int end = std::min(stride, j + (run + 1) * group - c);
      const float m = half_to_float(scales[run].m), s = half_to_float(scales[run].s);
      read_plane<Bits, 0>(packed, j, end, k, &m, &s, out + k * stride);
      j = end;
    }
}
template <int Bits>
float dot_codes_bits(const uint8_t* packed, int n, const float* qs) {
  constexpr int per = 8 / Bits, mask = (1 << Bits) - 1;
  const int stride = n / per;
  f32x8 acc = {};
  float tail = 0;
  for (int k = 0; k < per; ++k) {
    const float* w = qs + k * stride;
    int j = 0;
    for (; j + 8 <= stride; j += 8) {
      acc = fma8(codes8<Bits>(packed + j, k * Bits), load<f32x8>(w + j), acc);
    }
    for (; j < stride; ++j) tail = std::fma(float((packed[j] >> (k * Bits)) & mask), w[j], tail);
  }
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

template <int Bits>
void add_codes_bits(const uint8_t* packed, int n, int group, const float* a, float* out) {
  constexpr int per = 8 / Bits, mask = (1 << Bits) - 1;
  const int stride = n / per;
  for (int k = 0; k < per; ++k)
    for (int j = 0; j < stride;) {  // run by run of `group` channels, one weight each
      const int c = k * stride + j, run = c / group;
      const int end = std::min(stride, j + (run + 1) * group - c);
      float* o = out + k * stride;
      const f32x8 w = f32x8{} + a[run];
      for (; j + 8 <= end; j += 8) {
        const f32x8 r = fma8(codes8<Bits>(packed + j, k * Bits), w, load<f32x8>(o + j));
        std::memcpy(o + j, &r, sizeof r);
      }
      for (; j < end; ++j) o[j] = std::fma(float((packed[j] >> (k * Bits)) & mask), a[run], o[j]);
    }
}
template <int Bits>
void dot_code_rows_bits(const uint8_t* packed, int row_stride, int rows, int n, const float* qs, float qm,
                        float* scores) {
  for (int i = 0; i < rows; ++i) scores[i] = dot_codes_bits<Bits>(packed + size_t(i) * row_stride, n, qs) + qm;
}

template <int Bits>
void add_value_rows_bits(const uint8_t* packed, int row_stride, int rows, int n, int group, const Scale* scales,
                         const float* probs, float* out) {
  const int runs = n / group;
  float a[64], bias[64] = {};  // runs of at least 8 channels (head_dim <= 512)
  for (int i = 0; i < rows; ++i) {
    const Scale* sc = scales + size_t(i) * runs;
    for (int r = 0; r < runs; ++r) {
      a[r] = probs[i] * half_to_float(sc[r].s);
      bias[r] = std::fma(probs[i], half_to_float(sc[r].m), bias[r]);
    }
    add_codes_bits<Bits>(packed + size_t(i) * row_stride, n, group, a, out);
  }
  for (int c = 0; c < n; ++c) out[c] += bias[c / group];
}
}  // namespace

void dot_code_rows(const uint8_t* packed, int row_stride, int rows, int n, int bits, const float* qs, float qm,
                   float* scores) {
  switch (bits) {
    case 8: return dot_code_rows_bits<8>(packed, row_stride, rows, n, qs, qm, scores);
    case 4: return dot_code_rows_bits<4>(packed, row_stride, rows, n, qs, qm, scores);
    default: return dot_code_rows_bits<2>(packed, row_stride, rows, n, qs, qm, scores);
  }
}

void add_value_rows(const uint8_t* packed, int row_stride, int rows, int n, int group, int bits, const Scale* scales,
                    const float* probs, float* out) {
  if (n / group > 64) {  // very small runs: row by row through the general reader
    std::vector<float> v(static_cast<size_t>(n));
    for (int i = 0; i < rows; ++i) {
      read_value_row(packed + size_t(i) * row_stride, n, group, bits, scales + size_t(i) * (n / group), v.data());
      for (int c = 0; c < n; ++c) out[c] = std::fma(probs[i], v[size_t(c)], out[c]);
    }
    return;
  }
  switch (bits) {
    case 8: return add_value_rows_bits<8>(packed, row_stride, rows, n, group, scales, probs, out);
    case 4: return add_value_rows_bits<4>(packed, row_stride, rows, n, group, scales, probs, out);
    default: return add_value_rows_bits<2>(packed, row_stride, rows, n, group, scales, probs, out);
  }
}

float dot_codes(const uint8_t* packed, int n, int bits, const float* qs) {
  switch (bits) {
    case 8: return dot_codes_bits<8>(packed, n, qs);
    case 4: return dot_codes_bits<4>(packed, n, qs);
    default: return dot_codes_bits<2>(packed, n, qs);
  }
}

void add_codes(const uint8_t* packed, int n, int group, int bits, const float* a, float* out) {
  switch (bits) {
    case 8: return add_codes_bits<8>(packed, n, group, a, out);
    case 4: return add_codes_bits<4>(packed, n, group, a, out);
    default: return add_codes_bits<2>(packed, n, group, a, out);
  }
}

void read_row(const uint8_t* packed, int n, int bits, const float* m, const float* s, float* out) {
  switch (bits) {
    case 8: return read_row_bits<8>(packed, n, m, s, out);
    case 4: return read_row_bits<4>(packed, n, m, s, out);
    case 2: return read_row_bits<2>(packed, n, m, s, out);
  }
}

void read_value_row(const uint8_t* packed, int n, int group, int bits, const Scale* scales, float* out) {
  switch (bits) {
    case 8: return read_value_row_bits<8>(packed, n, group, scales, out);
    case 4: return read_value_row_bits<4>(packed, n, group, scales, out);
    case 2: return read_value_row_bits<2>(packed, n, group, scales, out);
  }
}

void widen_scales(const Scale* scales, int n, int group, float* m, float* s) {
  for (int c = 0; c < n; ++c) {
    m[c] = half_to_float(scales[c / group].m);
    s[c] = half_to_float(scales[c / group].s);
  }
}

}  // namespace h2o::kvq
