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
#include "core/model/quant_blocks.h"

namespace h2o {

// The weight types are DType (core/model/dtype.h, ggml's ids); here they are
// called by what this module adds to them.
using QuantType = DType;

// Every type this module reads and writes, in id order.
inline constexpr std::array<QuantType, 13> kAllQuantTypes = {
    QuantType::F32,  QuantType::F16,  QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0,
    QuantType::Q5_1, QuantType::Q8_0, QuantType::Q2_K, QuantType::Q3_K, QuantType::Q4_K,
    QuantType::Q5_K, QuantType::Q6_K, QuantType::BF16};

// kQK, kQK_K and the block layouts (BlockQ8_0, ..., BlockQ6_K) are in
// quant_blocks.h, with the value arithmetic the CUDA kernels share.

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
