#pragma once
// Internal to core/cpu: the row kernels behind quant_matvec.h, one set per
// instruction set. Each set lives in its own translation unit compiled for
// that instruction set only (core/CMakeLists.txt), and is called only after
// the CPU was checked (quant_matvec.cpp). This header therefore holds
// declarations and plain structs only: an inline function defined here would
// be compiled once per instruction set and the linker could keep the AVX-512
// copy for everyone.
#include <cstddef>
#include <cstdint>

#include "core/model/quant.h"

namespace h2o::cpu::kern {

// A read-only view of QuantizedActs: n_x rows of `cols` activations.
struct Acts {
  int n_x = 0;
  int64_t cols = 0;
  const float* f = nullptr;  // F32 format: the rows as given, cols apart
  // Q8 formats: value i of row t is d[t * (cols / B) + i / B] * q[t * cols + i],
  // B = 32 (Q8x32) or 256 (Q8x256).
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const float* s = nullptr;         // Q8x32: d * sum(q) per block
  const int16_t* bsum16 = nullptr;  // Q8x256: sum(q) per 16, cols / 16 per row
  const int16_t* bsum32 = nullptr;  // Q8x256: sum(q) per 32, cols / 32 per row
  // Q16 formats: value i of row t is d[t * (cols / B) + i / B] * q16[t * cols + i].
  const int16_t* q16 = nullptr;
  const int32_t* sum32 = nullptr;  // Q16x256: sum(q16) per 32, cols / 32 per row
  const int32_t* sum16 = nullptr;  // Q16x256: sum(q16) per 16, cols / 16 per row
  // q16 as two byte planes for the tile kernels: Q16x32 unsigned, q16 = 256 * (hi - 128) + lo;
  // Q16x256 signed (int8 in these bytes), q16 = 256 * hi + lo.
  const uint8_t* lo = nullptr;
  const uint8_t* hi = nullptr;
};

// out[t * out_stride + o] = dot(row o of w, activation row t), for o < rows and
// t < x.n_x. Row o starts at w + o * row_bytes; cols is a multiple of the
// type's block (and of 32 for every type: checked by the caller).
using Kernel = void (*)(const uint8_t* w, size_t row_bytes, int64_t rows, const Acts& x, float* out,
                        int64_t out_stride);

// The layout of one block of a tile of 16 rows (quant_matvec.h), written by
// make_tiles and read by the tile kernels: byte offsets within the block.
struct TileQ8_0 {  // per 32 elements
  static constexpr size_t kD = 0, kSum = 32, kWeights = 64;  // 16 f16 scales, 16 int16 weight sums, [8][16][4] int8
  static constexpr size_t kBytes = 64 + 512;
};
struct TileQ4_K {  // per 256 elements
  static constexpr size_t kD = 0, kDmin = 32, kScales = 64, kMins = 192;  // f16 x 16 each; u8 [8 sub-blocks][16 rows]
  static constexpr size_t kCodes = 320;  // [8 sub-blocks][4][16 rows][4 bytes], two codes per byte
  static constexpr size_t kBytes = kCodes + 2048;
};
struct TileQ6_K {  // per 256 elements
  static constexpr size_t kD = 0, kScales = 32;  // 16 f16; int8 [16 sub-blocks][16 rows]
  static constexpr size_t kCodes = 288, kSubBlock = 192;  // per 16-element sub-block: 2 x 64 nibble bytes, 64 high-bit bytes
  static constexpr size_t kBytes = kCodes + 16 * kSubBlock;
};

// Tiles of 16 weight rows (quant_matvec.h): out[t * out_stride + 16 * k + r]
// = dot(row r of tile k, activation row t) for k in [tile_begin, tile_end).
using TileKernel = void (*)(const uint8_t* tiles, int64_t cols, int64_t tile_begin, int64_t tile_end, const Acts& x,
                            float* out, int64_t out_stride);
// The AVX-512 VNNI tile kernel for type t; nullptr where there is none (or
// the CPU lacks VNNI).
TileKernel avx512_tile_kernel(QuantType t);

// Passes over weight rows made by the loops of quant_rows.h, reported once
// per kernel call; kept only while a WeightPassCount lives (quant_matvec.h).
void add_weight_passes(int64_t passes);

// The kernel for type t in each instruction set; nullptr where a set has none.
Kernel portable_kernel(QuantType t);
Kernel avx2_kernel(QuantType t);
Kernel avx512_kernel(QuantType t);

}  // namespace h2o::cpu::kern
