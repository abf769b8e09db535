#pragma once
// The weight formats a matrix keeps on the device at `--precision native`
// (weight_convert.h): GGUF's Q8_0, Q4_0, Q4_K, Q5_K and Q6_K blocks byte for
// byte as the file stores them, and f16 (the other block types, converted on
// upload). matvec_quant.cu multiplies them and dequantize.cu widens rows of
// them; both walk a row in *pieces*, the elements one lane decodes at a time,
// through the interface below. The values come from core/model/quant_blocks.h,
// the functions the CPU's dequantisation calls: the same scales, the same
// roundings, bit for bit.
//
// A format F gives:
//   kPieceElems             elements of a piece (32; 16 for f16)
//   Raw load(row, piece)    the piece's bytes in registers, loads issued together
//   Scales scales(raw, p)   the piece's multipliers, once per piece
//   decode(raw, s, p, w, v) word w < kWords of the piece as kGroups groups of 4 values
//   offset(p, w, g)         the row element of v[g][0] (4 consecutive elements)
// and, for the integer path (matvec_int8; all but f16, kInt8):
//   codes(raw, p, w, g)     word w of group g as four integer codes q (quant_blocks.h)
//   linear(s, g, a, b)      group g's values are a * q - b (kOffset: b may be nonzero)
// A group's kWords words are 4 kWords consecutive elements from offset(p, 0, g)
// (16, or 32 for Q8_0), all in one 32-element block of x and one half of it
// but for Q8_0, and under one scale.
//
// Loads: Q4_K (144 bytes) and Q5_K (176) are multiples of 16 bytes, so each of
// their pieces is 16-byte loads; Q8_0 (34), Q4_0 (18) and Q6_K (210) blocks
// sit on 2-byte boundaries, so their codes come as aligned 4-byte words, one
// more than needed, funnel-shifted into place (load_words). That extra word may
// lie up to 4 bytes past a matrix's last block: uploads pad every matrix by
// kFormatTailBytes. Consecutive lanes take consecutive pieces, so a warp reads
// one contiguous stretch of a row.
#include <cstddef>
#include <cstdint>

#include "core/model/quant_blocks.h"
#include "kernels/portable.h"
#include "kernels/weight_convert.h"

namespace H2O_KERN_NS {

// Bytes every matrix of a block format is padded with on the device (load_words' extra word).
constexpr size_t kFormatTailBytes = 16;

namespace fmt {

__device__ __forceinline__ uint4 load16(const uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) {
  return __ldg(reinterpret_cast<const unsigned short*>(p));
}
__device__ __forceinline__ int load_s8(const uint8_t* p) { return __ldg(reinterpret_cast<const signed char*>(p)); }
__device__ __forceinline__ uint32_t word_of(const uint4& u, int i) { return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w; }

// N little-endian words from a 2-byte aligned address: N + 1 aligned 4-byte
// loads, each output the 4 bytes straddling two of them (a funnel shift).
template <int N>
__device__ __forceinline__ void load_words(const uint8_t* p, uint32_t (&w)[N]) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const unsigned* base = reinterpret_cast<const unsigned*>(a & ~uintptr_t(3));
  const unsigned shift = unsigned(a & 2) * 8;  // 0 or 16
  uint32_t raw[N + 1];
  H2O_UNROLL
  for (int i = 0; i <= N; ++i) raw[i] = __ldg(base + i);
  H2O_UNROLL
  for (int i = 0; i < N; ++i) w[i] = uint32_t(((uint64_t(raw[i + 1]) << 32) | raw[i]) >> shift);
}

// Q8_0: a piece is one block; word w is codes 4w..4w+3.
struct Q8_0 {
  static constexpr int kPieceElems = 32, kWords = 8, kGroups = 1;
  struct Raw {
    uint32_t qs[8];
    uint16_t d;
  };
  struct Scales {
    float d;
  };
  __device__ static Raw load(const uint8_t* row, int p) {
    const uint8_t* b = row + size_t(p) * sizeof(BlockQ8_0);
    Raw r;
    load_words(b + offsetof(BlockQ8_0, qs), r.qs);
    r.d = load_u16(b + offsetof(BlockQ8_0, d));
    return r;
  }
  __device__ static Scales scales(const Raw& r, int) { return {half_bits_to_float(r.d)}; }
  __device__ static void decode(const Raw& r, const Scales& s, int, int w, float (&v)[kGroups][4]) {
    q8_0_word(r.qs[w], s.d, v[0]);
  }
  __device__ static int offset(int p, int w, int) { return 32 * p + 4 * w; }
  static constexpr bool kInt8 = true, kOffset = false;
  __device__ static uint32_t codes(const Raw& r, int, int w, int) { return r.qs[w]; }
  __device__ static void linear(const Scales& s, int, float& a, float& b) { a = s.d, b = 0; }
};

// Q4_0: a piece is one block; word w is code bytes 4w..4w+3: elements 4w..
// (low nibbles) and 16 + 4w.. (high).
struct Q4_0 {
  static constexpr int kPieceElems = 32, kWords = 4, kGroups = 2;
  struct Raw {
    uint32_t qs[4];
    uint16_t d;
  };
  struct Scales {
    float d;
  };
  __device__ static Raw load(const uint8_t* row, int p) {
    const uint8_t* b = row + size_t(p) * sizeof(BlockQ4_0);
    Raw r;
    load_words(b + offsetof(BlockQ4_0, qs), r.qs);
    r.d = load_u16(b + offsetof(BlockQ4_0, d));
    return r;
  }
  __device__ static Scales scales(const Raw& r, int) { return {half_bits_to_float(r.d)}; }
  __device__ static void decode(const Raw& r, const Scales& s, int, int w, float (&v)[kGroups][4]) {
    q4_0_word(r.qs[w], s.d, v[0], v[1]);
  }
  __device__ static int offset(int p, int w, int g) { return 32 * p + 4 * w + 16 * g; }
  static constexpr bool kInt8 = true, kOffset = true;
  __device__ static uint32_t codes(const Raw& r, int, int w, int g) { return nibble_codes(r.qs[w], g); }
  __device__ static void linear(const Scales& s, int, float& a, float& b) { a = s.d, b = 8 * s.d; }  // d (q - 8)
};

// Q4_K / Q5_K pieces: piece i < 8 of a block is code bytes 16i..16i+15, in
// sub-blocks 2j and 2j + 1 (j = i / 2) at p = 16 (i % 2) + 4w.
struct K4Piece {
  __device__ static int offset(int p, int w, int g) {
    const int i = p % 8;
    return kQK_K * (p / 8) + 64 * (i / 2) + 16 * (i % 2) + 4 * w + 32 * g;
  }
  struct Scales {
    float d1, m1, d2, m2;
  };
  // From the block's first 16 bytes: d, dmin (halves), the 12 packed scale bytes.
  __device__ static Scales scales(const uint4& head, int p) {
    const float d = half_bits_to_float(uint16_t(head.x & 0xffffu)), dmin = half_bits_to_float(uint16_t(head.x >> 16));
    const int j = (p % 8) / 2;
    int sc1, mn1, sc2, mn2;
    k4_scale_min_words(head.y, head.z, head.w, 2 * j, &sc1, &mn1);
    k4_scale_min_words(head.y, head.z, head.w, 2 * j + 1, &sc2, &mn2);
    return {k_scale(d, sc1), k_scale(dmin, mn1), k_scale(d, sc2), k_scale(dmin, mn2)};
  }
  static constexpr bool kInt8 = true, kOffset = true;
  __device__ static void linear(const Scales& s, int g, float& a, float& b) {
    a = g == 0 ? s.d1 : s.d2;
    b = g == 0 ? s.m1 : s.m2;
  }
};

struct Q4_K : K4Piece {
  static constexpr int kPieceElems = 32, kWords = 4, kGroups = 2;
  static_assert(sizeof(BlockQ4_K) % 16 == 0 && offsetof(BlockQ4_K, qs) == 16, "16-byte loads");
  struct Raw {
    uint4 head, qs;
  };
  __device__ static Raw load(const uint8_t* row, int p) {
    const uint8_t* b = row + size_t(p / 8) * sizeof(BlockQ4_K);
    return {load16(b), load16(b + offsetof(BlockQ4_K, qs) + 16 * (p % 8))};
  }
  __device__ static Scales scales(const Raw& r, int p) { return K4Piece::scales(r.head, p); }
  __device__ static void decode(const Raw& r, const Scales& s, int, int w, float (&v)[kGroups][4]) {
    q4_k_word(word_of(r.qs, w), s.d1, s.m1, s.d2, s.m2, v[0], v[1]);
  }
  __device__ static uint32_t codes(const Raw& r, int, int w, int g) { return nibble_codes(word_of(r.qs, w), g); }
};

// Q5_K: as Q4_K, plus qh bytes 16 (i % 2)..+15 for bit 4.
struct Q5_K : K4Piece {
  static constexpr int kPieceElems = 32, kWords = 4, kGroups = 2;
  static_assert(sizeof(BlockQ5_K) % 16 == 0 && offsetof(BlockQ5_K, qh) == 16 && offsetof(BlockQ5_K, qs) == 48,
                "16-byte loads");
  struct Raw {
    uint4 head, qh, qs;
  };
  __device__ static Raw load(const uint8_t* row, int p) {
    const uint8_t* b = row + size_t(p / 8) * sizeof(BlockQ5_K);
    const int i = p % 8;
    return {load16(b), load16(b + offsetof(BlockQ5_K, qh) + 16 * (i % 2)), load16(b + offsetof(BlockQ5_K, qs) + 16 * i)};
  }
  __device__ static Scales scales(const Raw& r, int p) { return K4Piece::scales(r.head, p); }
  __device__ static void decode(const Raw& r, const Scales& s, int p, int w, float (&v)[kGroups][4]) {
    q5_k_word(word_of(r.qs, w), word_of(r.qh, w), (p % 8) / 2, s.d1, s.m1, s.d2, s.m2, v[0], v[1]);
  }
  __device__ static uint32_t codes(const Raw& r, int p, int w, int g) {
    return q5_k_codes(word_of(r.qs, w), word_of(r.qh, w), (p % 8) / 2, g);
  }
};

// Q6_K: piece i < 8 of a block is half n = i / 4, ql column h = (i / 2) % 2,
// p = 16 (i % 2) + 4w: ql bytes 64n + 32h + p.., qh bytes 32n + p.., and the
// scales of sub-blocks 8n + 2h + i % 2 (low nibbles, j = h) and 4 more (j = h + 2).
struct Q6_K {
  static constexpr int kPieceElems = 32, kWords = 4, kGroups = 2;
  struct Raw {
    uint32_t ql[4], qh[4];
    int s1, s2;
    uint16_t d;
  };
  struct Scales {
    float s1, s2;
  };
  __device__ static Raw load(const uint8_t* row, int p) {
    const uint8_t* b = row + size_t(p / 8) * sizeof(BlockQ6_K);
    const int i = p % 8, n = i / 4, h = (i / 2) % 2, p0 = 16 * (i % 2);
    Raw r;
    load_words(b + offsetof(BlockQ6_K, ql) + 64 * n + 32 * h + p0, r.ql);
    load_words(b + offsetof(BlockQ6_K, qh) + 32 * n + p0, r.qh);
    const uint8_t* sc = b + offsetof(BlockQ6_K, scales) + 8 * n + 2 * h + i % 2;
    r.s1 = load_s8(sc);
    r.s2 = load_s8(sc + 4);
    r.d = load_u16(b + offsetof(BlockQ6_K, d));
    return r;
  }
  __device__ static Scales scales(const Raw& r, int) {
    const float d = half_bits_to_float(r.d);
    return {k_scale(d, r.s1), k_scale(d, r.s2)};
  }
  __device__ static void decode(const Raw& r, const Scales& s, int p, int w, float (&v)[kGroups][4]) {
    q6_k_word(r.ql[w], r.qh[w], ((p % 8) / 2) % 2, s.s1, s.s2, v[0], v[1]);
  }
  __device__ static int offset(int p, int w, int g) {
    const int i = p % 8;
    return kQK_K * (p / 8) + 128 * (i / 4) + 32 * ((i / 2) % 2) + 16 * (i % 2) + 4 * w + 64 * g;
  }
  static constexpr bool kInt8 = true, kOffset = true;
  __device__ static uint32_t codes(const Raw& r, int p, int w, int g) {
    return q6_k_codes(r.ql[w], r.qh[w], ((p % 8) / 2) % 2, g);
  }
  __device__ static void linear(const Scales& s, int g, float& a, float& b) {  // s (q - 32)
    a = g == 0 ? s.s1 : s.s2;
    b = 32 * a;
  }
};

// f16: a piece is 16 halves (two 16-byte loads); word w is halves 4w..4w+3.
struct F16 {
  static constexpr int kPieceElems = 16, kWords = 4, kGroups = 1;
  struct Raw {
    uint4 a, b;
  };
  struct Scales {};
  __device__ static Raw load(const uint8_t* row, int p) {
    const uint8_t* at = row + size_t(p) * 32;
    return {load16(at), load16(at + 16)};
  }
  __device__ static Scales scales(const Raw&, int) { return {}; }
  __device__ static void decode(const Raw& r, const Scales&, int, int w, float (&v)[kGroups][4]) {
    const uint4& u = w < 2 ? r.a : r.b;
    const uint32_t lo = word_of(u, 2 * (w % 2)), hi = word_of(u, 2 * (w % 2) + 1);
    v[0][0] = half_bits_to_float(uint16_t(lo & 0xffffu));
    v[0][1] = half_bits_to_float(uint16_t(lo >> 16));
    v[0][2] = half_bits_to_float(uint16_t(hi & 0xffffu));
    v[0][3] = half_bits_to_float(uint16_t(hi >> 16));
  }
  __device__ static int offset(int p, int w, int) { return 16 * p + 4 * w; }
  static constexpr bool kInt8 = false;  // f16 weights multiply f32 inputs (matvec_quant)
};

}  // namespace fmt

}  // namespace H2O_KERN_NS

// Runs the statement with `F` as the format of `dtype` (weight_convert.h's is_block_format).
#define H2O_WITH_BLOCK_FORMAT(dtype, F, ...)             \
  switch (dtype) {                                       \
    case ::h2o::DType::Q8_0: {                           \
      using F = ::h2o::kern::fmt::Q8_0;                  \
      __VA_ARGS__;                                       \
      break;                                             \
    }                                                    \
    case ::h2o::DType::Q4_0: {                           \
      using F = ::h2o::kern::fmt::Q4_0;                  \
      __VA_ARGS__;                                       \
      break;                                             \
    }                                                    \
    case ::h2o::DType::Q4_K: {                           \
      using F = ::h2o::kern::fmt::Q4_K;                  \
      __VA_ARGS__;                                       \
      break;                                             \
    }                                                    \
    case ::h2o::DType::Q5_K: {                           \
      using F = ::h2o::kern::fmt::Q5_K;                  \
      __VA_ARGS__;                                       \
      break;                                             \
    }                                                    \
    case ::h2o::DType::Q6_K: {                           \
      using F = ::h2o::kern::fmt::Q6_K;                  \
      __VA_ARGS__;                                       \
      break;                                             \
    }                                                    \
    case ::h2o::DType::F16: {                            \
      using F = ::h2o::kern::fmt::F16;                   \
      __VA_ARGS__;                                       \
      break;                                             \
    }                                                    \
    default:                                             \
      break;                                             \
  }
