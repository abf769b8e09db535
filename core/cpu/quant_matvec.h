#pragma once
// Matrix-vector products (decode) and small batches with the weights kept in
// their GGUF type: out[t][o] = dot(W[o], x[t]), W row-major [rows, cols] with
// each row stored as row_bytes(type, cols) bytes (quant.h).
//
// Activation precision, per weight type (activation_format):
//  * F32, F16, BF16: x stays float32; weights are widened in registers (F16
//    through F16C / AVX-512 conversion) and products accumulate in float32.
//  * Q8_0: x is quantised to 16 bits per element with a float32 scale per
//    block of 32 (Q16x32). The kernels widen each weight byte to 16 bits once
//    and multiply pairs into int32 (pmaddwd / vpdpwssd).
//  * Q4_K, Q5_K, Q6_K: 16 bits with one float32 scale per 256 (Q16x256), plus
//    int32 sums per 32 for the sub-block mins. The weight codes are widened
//    and multiplied by their sub-block scale once, for every activation row.
//  * Q4_0, Q4_1, Q5_0, Q5_1: 8 bits per element with a float32 scale per block
//    of 32 (Q8x32), aligned with the weight blocks.
//  * Q2_K, Q3_K: 8 bits with one scale per 256 (Q8x256, like ggml's Q8_K),
//    plus integer sums per 16 and 32 for the sub-block mins and offsets.
// Each x[i] becomes d * round(x[i] / d) with d = max|x over its block| / L
// (L = 127 in 8 bits; 32767 for Q16x32 and 32639 for Q16x256, whose tile
// kernels split q into signed bytes, q = 256 hi + lo), an error of at most d / 2 per element, so
// |result - exact| <= sum_i |W[o][i]| * d(i) / 2 (plus float rounding). With
// 16 bits that is float32's order; 8 bits alone errs by ~2 % of the largest
// logit on a random-weight model, so cpu_weights.h's project() reads the
// 8-bit formats as two terms.
//
// Integer sums never overflow: |x| <= 32767 and a 16-bit weight term is at
// most 32 * 128 = 4096 (Q6_K: code - 32 times an int8 scale), so each int32
// lane, which the kernels convert to float after at most 16 products, holds
// less than 2^31.
//
// The AVX2 and AVX-512 kernels, row and tile, take up to four activation
// rows per pass over a weight row, eight in the 8-bit formats (quant_rows.h):
// the weights are loaded and unpacked once for every session of a batched
// step (and for both terms of 8-bit activations). WeightPassCount below
// counts the passes.
//
// Kernels exist for a portable C++ path, AVX2 (+FMA, F16C) and AVX-512
// (F, BW, DQ, VL, on top of AVX2; it reuses the AVX2 kernels of the types
// where 512-bit forms were not faster, and runs Q8_0 with VNNI when the CPU
// has it). A path runs only if the CPU reports it (isa_supported), whatever
// the compiler flags of the rest of the program.
#include <cstdint>
#include <vector>

#include "core/cpu/line_aligned.h"
#include "core/model/quant.h"

namespace h2o::cpu {

enum class Isa { Portable, Avx2, Avx512 };
const char* isa_name(Isa isa);  // "portable", "avx2", "avx512"
// True if this CPU and OS can run the path (CPUID and XSAVE state, via the compiler's cpu-supports).
bool isa_supported(Isa isa);
// The fastest supported path; detected once.
Isa best_isa();

enum class ActFormat { F32, Q8x32, Q8x256, Q16x32, Q16x256 };
ActFormat activation_format(QuantType weight_type);
// Elements sharing one activation scale: 1 (float32), 32 or 256.
int activation_block(QuantType weight_type);
// True for the 8-bit formats (read as two terms by project()).
bool eight_bit(ActFormat f);

// Activations x[n_x][cols] prepared once for every row of a weight type
// (quantised to 8 or 16 bits where the type's kernels read them so, with the
// byte planes of the tile kernels where this CPU has tiles for the type).
// Reusable: prepare() again keeps the buffers. A NaN or infinite activation
// makes every output of its row NaN in the integer formats (its block's scale
// is NaN), and non-finite by IEEE rules with float32 activations.
class QuantizedActs {
 public:
  // Throws Error (one line) if cols is not a multiple of 32 and of the
  // type's block, or n_x < 1.
  void prepare(QuantType weight_type, const float* x, int n_x, int64_t cols);

  QuantType weight_type() const { return type_; }
  ActFormat format() const { return format_; }
  int n_x() const { return n_x_; }
  int64_t cols() const { return cols_; }
  // The value the kernels use for x[t][i] (for tests and error bounds).
  float value(int t, int64_t i) const;
  // The scale of the activation block holding x[t][i] (0 for float32).
  float scale(int t, int64_t i) const;

 private:
  friend struct ActsAccess;
  QuantType type_ = QuantType::F32;
  ActFormat format_ = ActFormat::F32;
  int n_x_ = 0;
  int64_t cols_ = 0;
  // Every row starts on a cache line (cols is a multiple of 32): see line_aligned.h.
  LineAligned<float> f_;  // F32: a copy of x
  LineAligned<int8_t> q_;
  LineAligned<int16_t> q16_;
  std::vector<float> d_, s_;
  std::vector<int16_t> bsum16_, bsum32_;
  std::vector<int32_t> sum32_, sum16_;
  LineAligned<uint8_t> lo_, hi_;
};

// out[t * out_stride + o] = dot(W[o], x[t]) for o in [row_begin, row_end) and
// t < x.n_x(); w points at row 0 of W (rows contiguous). Reads each weight row
// once for all n_x activation rows (it stays in L1 between them). Callers
// split [0, rows) between threads. Throws Error if x was prepared for another
// type or another cols, or if isa is not supported here; the checks come
// before any row is touched, so a caller can run them once on its own thread
// with an empty range (row_begin == row_end) before handing rows to workers.
void matvec_rows(QuantType type, const void* w, int64_t cols, int64_t row_begin, int64_t row_end,
                 const QuantizedActs& x, float* out, int64_t out_stride, Isa isa = best_isa());

// Row tiles: on CPUs with AVX-512 VNNI, Q8_0, Q4_K and Q6_K matrices are
// also laid out in tiles of 16 rows, block by block (as llama.cpp repacks
// its weights for such CPUs): each block of a tile holds the 16 rows' scales
// and their weights as [groups of 4 elements][16 rows][4 bytes], so that one
// vpdpbusd multiplies 4 broadcast activation bytes into all 16 rows at once:
// 64 products per instruction, where a row at a time gets 32 per several.
// The activations are the 16-bit ones above, as two byte planes (hi, lo), so
// the tiles are as exact as the row kernels: every block's or sub-block's
// integer sum is exact (quant_kernels_avx512.cpp says why) and the results
// equal matvec_rows' up to float rounding. Sizes against the rows they hold:
// Q8_0 576 / 544 bytes (16 rows' weight sums added), Q4_K 2368 / 2304 (the
// scales unpacked), Q6_K the same. Rows past the last whole tile stay with
// matvec_rows.
constexpr int kTileRows = 16;
// True if matrices of type t get tiles on this CPU.
bool tiles_available(QuantType t);
// Bytes of one tile of rows of `cols` elements.
size_t tile_bytes(QuantType t, int64_t cols);
// The tiles of W's first rows / 16 * 16 rows (W row-major, rows contiguous),
// written to `out` (rows / 16 * tile_bytes(t, cols) bytes) or returned.
void make_tiles(QuantType t, const void* w, int64_t rows, int64_t cols, uint8_t* out);
std::vector<uint8_t> make_tiles(QuantType t, const void* w, int64_t rows, int64_t cols);
// out[t * out_stride + o] = dot(W[o], x[t]) for o in [16 * tile_begin,
// 16 * tile_end); `tiles` from make_tiles. Throws Error as matvec_rows does,
// or if tiles_available(type) is false.
void matvec_tiles(QuantType type, const uint8_t* tiles, int64_t cols, int64_t tile_begin, int64_t tile_end,
                  const QuantizedActs& x, float* out, int64_t out_stride);

// Passes of the kernels over weight rows: a row kernel handed a weight row
// (a tile kernel a tile's 16) for one group of activation rows makes one
// pass over it. The AVX2 and AVX-512 kernels take up to four activation rows
// per pass (eight in the 8-bit formats, whose rows come as two terms), so a
// batched step of up to four sessions makes one pass over each weight row,
// as one session does; the portable kernels make one per activation row.
// Counted, on every thread, from zero while an instance lives (tests: one at
// a time); nothing is counted otherwise.
class WeightPassCount {
 public:
  WeightPassCount();
  ~WeightPassCount();
  WeightPassCount(const WeightPassCount&) = delete;
  WeightPassCount& operator=(const WeightPassCount&) = delete;
  int64_t passes() const;
};

// The whole product on the calling thread: out[t * rows + o], t < n_x.
void matvec(QuantType type, const void* w, int64_t rows, int64_t cols, const float* x, int n_x, float* out,
            Isa isa = best_isa());

}  // namespace h2o::cpu
