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

void pack_row(const uint8_t* codes, int n, int bits, uint8_t* out) {
  for (int j = 0; j < row_bytes(n, bits); ++j) out[j] = packed_byte(j, n, bits, [&](int c) { return codes[c]; });
}

void unpack_row(const uint8_t* packed, int n, int bits, uint8_t* codes) {
  for (int c = 0; c < n; ++c) codes[c] = uint8_t(code_at(packed, n, bits, c));
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
    scales[c] = HostMath::scale_of_range(tokens, [&](int t) { return rows[size_t(t) * n + c]; }, bits);
    for (int t = 0; t < tokens; ++t)
      codes[size_t(t) * n + c] = uint8_t(HostMath::code_of(rows[size_t(t) * n + c], scales[c], bits));
  }
  for (int t = 0; t < tokens; ++t) pack_row(&codes[size_t(t) * n], n, bits, packed + size_t(t) * row_stride);
}

void quantize_value_row(const float* row, int n, int group, int bits, Scale* scales, uint8_t* packed) {
  std::vector<uint8_t> codes(static_cast<size_t>(n));
  for (int g = 0; g < n / group; ++g) {
    const float* x = row + g * group;
    scales[g] = HostMath::scale_of_range(group, [&](int c) { return x[c]; }, bits);
    for (int c = 0; c < group; ++c) codes[size_t(g * group + c)] = uint8_t(HostMath::code_of(x[c], scales[g], bits));
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

// Eight packed bytes widened to 32-bit lanes once, for all the planes they hold.
inline i32x8 widen8(const uint8_t* bytes) {
#ifdef __AVX2__
  return i32x8(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes))));
#else
  return __builtin_convertvector(load<u8x8>(bytes), i32x8);
#endif
}

// Plane K of widened bytes as floats (the top plane needs no mask).
template <int Bits, int K>
inline f32x8 plane(i32x8 wide) {
  constexpr int mask = (1 << Bits) - 1;
  const i32x8 shifted = wide >> (K * Bits);
  return __builtin_convertvector((K + 1) * Bits == 8 ? shifted : (shifted & mask), f32x8);
}

// Calls fn(plane k's eight codes as floats, k) for every plane of one widened block.
template <int Bits, class Fn>
inline void for_each_plane(i32x8 wide, Fn fn) {
  fn(plane<Bits, 0>(wide), 0);
  if constexpr (Bits <= 4) fn(plane<Bits, 1>(wide), 1);
  if constexpr (Bits <= 2) {
    fn(plane<Bits, 2>(wide), 2);
    fn(plane<Bits, 3>(wide), 3);
  }
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
// The lane sums of eight vectors: out[r] = sum of acc[r]'s eight lanes.
inline f32x8 lane_sums(const f32x8* acc) {
#ifdef __AVX__
  const __m256 t0 = _mm256_hadd_ps(__m256(acc[0]), __m256(acc[1])), t1 = _mm256_hadd_ps(__m256(acc[2]), __m256(acc[3]));
  const __m256 t2 = _mm256_hadd_ps(__m256(acc[4]), __m256(acc[5])), t3 = _mm256_hadd_ps(__m256(acc[6]), __m256(acc[7]));
  // Each 128-bit half of u0 (u1) now holds rows 0-3 (4-7) summed over that half's lanes.
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return f32x8(_mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31)));
#else
  f32x8 out;
  for (int r = 0; r < 8; ++r) out[r] = ((acc[r][0] + acc[r][4]) + (acc[r][1] + acc[r][5])) + ((acc[r][2] + acc[r][6]) + (acc[r][3] + acc[r][7]));
  return out;
#endif
}

// The part of a row's dot product a vector loop leaves: channels past the last
// whole eight of each plane.
template <int Bits>
float dot_tail(const uint8_t* row, int n, const float* qs) {
  constexpr int per = 8 / Bits, mask = (1 << Bits) - 1;
  const int stride = n / per;
  float tail = 0;
  for (int k = 0; k < per; ++k)
    for (int j = stride & ~7; j < stride; ++j) tail = std::fma(float((row[j] >> (k * Bits)) & mask), qs[k * stride + j], tail);
  return tail;
}

// Key scores, eight rows at a time: eight independent accumulators (one FMA
// chain per row would wait on its own latency), summed across lanes together.
// A last partial block repeats its last row and drops the extra sums.
template <int Bits>
void dot_code_rows_bits(const uint8_t* packed, int row_stride, int rows, int n, const float* qs, float qm,
                        float* scores) {
  constexpr int per = 8 / Bits;
  const int stride = n / per;
  for (int i = 0; i < rows; i += 8) {
    const uint8_t* row[8];
    for (int r = 0; r < 8; ++r) row[r] = packed + size_t(std::min(i + r, rows - 1)) * row_stride;
    f32x8 acc[8] = {};
    for (int j = 0; j + 8 <= stride; j += 8) {
      f32x8 w[per];
      for (int k = 0; k < per; ++k) w[k] = load<f32x8>(qs + k * stride + j);
      for (int r = 0; r < 8; ++r)
        for_each_plane<Bits>(widen8(row[r] + j), [&](f32x8 codes, int k) { acc[r] = fma8(codes, w[k], acc[r]); });
    }
    const f32x8 sums = lane_sums(acc);
    for (int r = 0; r < std::min(8, rows - i); ++r) scores[i + r] = sums[r] + dot_tail<Bits>(row[r], n, qs) + qm;
  }
}

// out[c] += a[c / group] * code_c over one packed row: the general path, for
// planes or runs that do not split into whole eights.
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

// Blocks byte blocks of eight from byte `first` on, every plane of each (the
// output channels k * stride + first + 8 b ..), accumulated in registers over
// `rows` rows, each row's weight of a plane's eight a[i * runs + its run].
template <int Bits, int Blocks>
void add_blocks(const uint8_t* packed, int row_stride, int rows, int stride, int group, int runs, const float* a,
                int first, float* out) {
  constexpr int per = 8 / Bits;
  int run[Blocks][per];
  f32x8 acc[Blocks][per];
  for (int b = 0; b < Blocks; ++b)
    for (int k = 0; k < per; ++k) {
      const int c = k * stride + first + 8 * b;
      run[b][k] = c / group;
      acc[b][k] = load<f32x8>(out + c);
    }
  for (int i = 0; i < rows; ++i) {
    const uint8_t* row = packed + size_t(i) * row_stride + first;
    const float* weight = a + i * runs;
    for (int b = 0; b < Blocks; ++b)
      for_each_plane<Bits>(widen8(row + 8 * b), [&](f32x8 codes, int k) {
        acc[b][k] = fma8(codes, f32x8{} + weight[run[b][k]], acc[b][k]);
      });
  }
  for (int b = 0; b < Blocks; ++b)
    for (int k = 0; k < per; ++k) std::memcpy(out + k * stride + first + 8 * b, &acc[b][k], sizeof(f32x8));
}

// Values, kChunk rows at a time: each row's weights p s and the p m sums from
// one F16C pass over the chunk's scales, then the output held in registers
// four eights at a time while the rows stream past (planes and runs in whole
// eights), or row by row otherwise.
template <int Bits>
void add_value_rows_bits(const uint8_t* packed, int row_stride, int rows, int n, int group, const Scale* scales,
                         const float* probs, float* out) {
  constexpr int kChunk = 32, per = 8 / Bits;
  const int runs = n / group, stride = n / per;
  const bool whole_eights = stride % 8 == 0 && group % 8 == 0;
  float numbers[2 * kChunk * 64], a[kChunk * 64], bias[64] = {};  // runs <= 64 (checked by the caller)
  for (int first = 0; first < rows; first += kChunk) {
    const int count = std::min(kChunk, rows - first);
    f16_to_f32_row(reinterpret_cast<const uint16_t*>(scales + size_t(first) * runs), 2 * count * runs, numbers);
    // numbers: m, s of each run of each row. The p m sums in four chains, so
    // each addition does not wait on the one before.
    for (int i = 0; i < count; ++i)
      for (int r = 0; r < runs; ++r) a[i * runs + r] = probs[first + i] * numbers[2 * (i * runs + r) + 1];
    for (int r = 0; r < runs; ++r) {
      const float* m = numbers + 2 * r;
      const float* p = probs + first;
      float part0 = 0, part1 = 0, part2 = 0, part3 = 0;
      int i = 0;
      for (; i + 4 <= count; i += 4) {
        part0 = std::fma(p[i], m[2 * i * runs], part0);
        part1 = std::fma(p[i + 1], m[2 * (i + 1) * runs], part1);
        part2 = std::fma(p[i + 2], m[2 * (i + 2) * runs], part2);
        part3 = std::fma(p[i + 3], m[2 * (i + 3) * runs], part3);
      }
      for (; i < count; ++i) part0 = std::fma(p[i], m[2 * i * runs], part0);
      bias[r] += (part0 + part1) + (part2 + part3);
    }
    const uint8_t* chunk = packed + size_t(first) * row_stride;
    if (!whole_eights) {
      for (int i = 0; i < count; ++i) add_codes_bits<Bits>(chunk + size_t(i) * row_stride, n, group, a + i * runs, out);
      continue;
    }
    // Eight accumulators a pass: two blocks of 2-bit codes (four planes each), four of 4-bit; four of 8-bit.
    constexpr int kBlocks = per == 1 ? 4 : 8 / per;
    int j = 0;
    for (; j + 8 * kBlocks <= stride; j += 8 * kBlocks)
      add_blocks<Bits, kBlocks>(chunk, row_stride, count, stride, group, runs, a, j, out);
    for (; j < stride; j += 8) add_blocks<Bits, 1>(chunk, row_stride, count, stride, group, runs, a, j, out);
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
  int c = 0;
#if defined(__AVX2__) && defined(__F16C__)
  // Per channel (keys): eight (m, s) pairs a load, split into eight m and eight s halves.
  for (; group == 1 && c + 8 <= n; c += 8) {
    const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + c));
    const __m256i halves = _mm256_packus_epi32(_mm256_and_si256(pairs, _mm256_set1_epi32(0xFFFF)),
                                               _mm256_srli_epi32(pairs, 16));  // per lane: 4 m, then 4 s
    const __m256i split = _mm256_permute4x64_epi64(halves, 0xD8);             // 8 m, then 8 s
    _mm256_storeu_ps(m + c, _mm256_cvtph_ps(_mm256_castsi256_si128(split)));
    _mm256_storeu_ps(s + c, _mm256_cvtph_ps(_mm256_extracti128_si256(split, 1)));
  }
#endif
  for (; c < n; ++c) {
    m[c] = half_to_float(scales[c / group].m);
    s[c] = half_to_float(scales[c / group].s);
  }
}

}  // namespace h2o::kvq
