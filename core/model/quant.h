#pragma once
// ggml / GGUF tensor element types: their block layouts exactly as GGUF files
// store them, exact dequantisation, and simple quantisers (writers).
//
// A quantised row of n elements is n / block_size(t) blocks laid end to end;
// every block holds its own scale(s) as IEEE half floats (raw bits here), so
// a row is self-contained. Little-endian throughout, as GGUF is.
//
// dequantize_row gives bit for bit what ggml's dequantize_row_* gives: each
// product and sum rounded as ggml's C source writes it (quant.cpp is built
// with -ffp-contract=off so that no FMA merges `scale * q - min`). Checked
// against ggml (the llama.cpp carried by node-llama-cpp 3.22.1, built as
// shipped and with -march=native) on 16384 random values of every type: no bit differs.
//
// quantize_row is reference quality (round to nearest per block, a small
// search for the K-quants' sub-block scales): for tests and synthetic models,
// not a replacement for llama.cpp's importance-weighted quantisers.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/model/dtype.h"

namespace h2o {

// The weight types are DType (core/model/dtype.h, ggml's ids); here they are
// called by what this module adds to them.
using QuantType = DType;

// Every type this module reads and writes, in id order.
inline constexpr std::array<QuantType, 13> kAllQuantTypes = {
    QuantType::F32,  QuantType::F16,  QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0,
    QuantType::Q5_1, QuantType::Q8_0, QuantType::Q2_K, QuantType::Q3_K, QuantType::Q4_K,
    QuantType::Q5_K, QuantType::Q6_K, QuantType::BF16};

inline constexpr int kQK = 32;     // elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
inline constexpr int kQK_K = 256;  // elements per super-block of the K-quants

// ---- block layouts (ggml-common.h) ------------------------------------------
// Scales are IEEE half floats stored as raw bits. Comments give the value of
// element i of the block.

// 8.5 bits/weight. x[i] = d * qs[i]
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
// 4.5 bits/weight. Byte j holds x[j] (low nibble) and x[j + 16] (high nibble):
// x = d * (nibble - 8).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
// 5 bits/weight. As Q4_0 without the offset, plus a min: x = d * nibble + m.
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
// 5.5 bits/weight. Nibbles as Q4_0; bit i of qh (little-endian u32) is bit 4
// of element i: x = d * (q - 16), q in [0, 31].
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
// 6 bits/weight. As Q5_0 without the offset, plus a min: x = d * q + m.
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
// 2.625 bits/weight. 16 sub-blocks of 16; scales[k] = scale (low nibble) and
// min (high nibble) of elements 16k..16k+15. Element e = 128n + 32j + p
// (n < 2, j < 4, p < 32) is bits 2j..2j+1 of qs[32n + p]:
// x = d * scale * q - dmin * min.
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
// 3.4375 bits/weight. 16 sub-blocks of 16 with 6-bit scales s (stored s + 32,
// packed in 12 bytes, see q3k_scale). Element e = 128n + 32j + p: low two bits
// as Q2_K, high bit is bit 4n + j of hmask[p]; q = low - (high ? 0 : 4):
// x = d * s * q.
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
// 4.5 bits/weight. 8 sub-blocks of 32 with 6-bit scale and min (packed in 12
// bytes, see k4_scale_min). Element e = 64j + p (j < 4, p < 32) is the low
// nibble of qs[32j + p] for p < 32 in sub-block 2j, element 64j + 32 + p the
// high nibble, sub-block 2j + 1: x = d * scale * q - dmin * min.
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
// 5.5 bits/weight. As Q4_K plus a fifth bit: element 64j + p has bit 2j of
// qh[p], element 64j + 32 + p bit 2j + 1.
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
// 6.5625 bits/weight. 16 sub-blocks of 16 with signed 8-bit scales. Element
// e = 128n + 32j + p: low nibble of ql[64n + p + 32 (j & 1)] (j < 2) or its
// high nibble (j >= 2), bits 2j..2j+1 of qh[32n + p] on top: x = d * s * (q - 32).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// ---- type properties ----------------------------------------------------------

// The type with ggml id `id`, if this module knows it.
std::optional<QuantType> quant_type_from_id(uint32_t id);
// "Q4_K", "F16", ... (ggml's names); nullopt for any other name (case-sensitive).
std::optional<QuantType> quant_type_from_name(std::string_view name);
const char* quant_type_name(QuantType t);
// Elements per block: 1 for F32/F16/BF16, 32 or 256 for the quantised types.
int block_size(QuantType t);
// Bytes per block.
size_t block_bytes(QuantType t);
// Bytes of a row of n elements. Throws Error "<type> row of <n> elements: ..."
// (one line) when n is negative or not a multiple of block_size(t).
size_t row_bytes(QuantType t, int64_t n);

// The first of `blocks` blocks of type t at `data` whose half-float scale (or
// min) is NaN or infinite, or -1 when all are finite (float types: -1). What
// llama.cpp's ggml_validate_row_data checks: data of another type than the
// one a tensor's header claims shows up here (Q4_K bytes read as Q4_0).
int64_t first_nonfinite_scale(QuantType t, const void* data, int64_t blocks);

// Decoders of the packed 6-bit scales, as ggml reads them (get_scale_min_k4 and
// the Q3_K unpacking). j < 8 for Q4_K/Q5_K; k < 16 for Q3_K (value in [-32, 31]).
void k4_scale_min(const uint8_t scales[12], int j, uint8_t* scale, uint8_t* min);
int q3k_scale(const uint8_t scales[12], int k);
// Code e < 256 of a Q6_K block, q + 32 in [0, 63] (its value is d * scales[e / 16] * (code - 32)).
int q6k_code(const BlockQ6_K& b, int e);

// ---- conversion ------------------------------------------------------------------

// dst[0..n) = the values of the row at src. Throws Error on a bad n (row_bytes).
void dequantize_row(QuantType t, const void* src, float* dst, int64_t n);
// Writes row_bytes(t, n) bytes at dst encoding src[0..n) (finite values).
// Throws Error on a bad n.
void quantize_row(QuantType t, const float* src, void* dst, int64_t n);

}  // namespace h2o
