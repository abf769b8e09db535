#pragma once
// The CPU backend's view of a model's weights. A matrix stays in the file's
// type (no widened copy) whenever a kernel reads that type: float32, f16,
// bf16 and GGUF's quantised types through cpu::matvec_rows or row tiles (core/cpu/quant_matvec.h, which says what precision the
// activations take per type). Norms and biases, a few KB, are read as
// float32 copies. The rare matrix no typed kernel can take (f16 rows not a
// multiple of 32 elements) is widened to float32 once, at load.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/base/huge_page_buffer.h"
#include "core/base/thread_pool.h"
#include "core/cpu/quant_matvec.h"
#include "core/model/model.h"

namespace h2o::cpu {

struct Matrix {
  const void* data = nullptr;
  DType type = DType::F32;
  int64_t rows = 0, cols = 0;
  // The first tiles * 16 rows again in row tiles, where this CPU has a tile
  // kernel for the type (quant_matvec.h); null otherwise.
  const uint8_t* tiles = nullptr;
  int64_t tile_count = 0;
  int64_t bytes() const { return rows * int64_t(row_bytes(type, cols)); }
};

// Matrices that multiply activations are copied once, in their own type, to
// huge-page memory: as row tiles (quant_matvec.h) on CPUs with a tile kernel
// for their type, as their rows otherwise; the file's pages are handed back
// and then read only for embedding rows.
class Weights {
 public:
  // `projected`: the matrix multiplies activations (false for an embedding
  // only looked up row by row: it gets no tiles).
  Matrix matrix(const Tensor& t, bool projected = true);
  const float* vector(const Tensor& t);  // null for an absent tensor (no bias)
  // Bytes one forward pass reads: every matrix in its type (tiled ones as
  // their tiles, which hold up to 6 % more), vectors as float32.
  int64_t bytes_read() const { return bytes_read_; }

 private:
  const float* widened(const Tensor& t);
  uint8_t* arena_space(size_t bytes);
  std::vector<std::unique_ptr<float[]>> copies_;
  // Every projected matrix, as tiles or as its rows, one after the other in
  // huge-page arenas: streamed every token, through 4 KiB pages (the file's)
  // it cost a TLB miss every 4 KiB (stories110M Q8_0: 15-20 % slower). Only
  // the pages written become resident, so an arena's unused tail costs nothing.
  std::vector<HugePageBuffer> arenas_;
  size_t arena_used_ = 0;
  int64_t bytes_read_ = 0;
};

// Scratch of project(): per product, the activations as its kernels read
// them, and an 8-bit product's two-term rows and their results.
struct ProjectScratch {
  std::vector<QuantizedActs> acts;
  std::vector<std::vector<float>> split, products;
};

// out[t * w.rows + o] = dot(W[o], x[t]) for t < n_x, on the pool: float32,
// f16 and bf16 weights through matvec_rows with float32 activations. Each
// weight row is loaded once for up to four activation rows (quant_rows.h),
// so a batched step of up to four sessions makes one pass over every
// matrix (quant_matvec.h's WeightPassCount counts them).
//
// Quantised weights read 16-bit or 8-bit activations, per type
// (quant_matvec.h). 16 bits err at float32's order. One 8-bit term per
// activation is llama.cpp's choice and errs by up to half a step of each
// block's scale: on a random-weight model that is ~2 % of the largest logit
// after a few layers. So each 8-bit activation row is split into two terms,
// x = Q(x) + Q(x - Q(x)), read together (each weight row is still read
// once, from memory, for both): the error falls ~250-fold, for twice the
// integer multiply-adds. The types with 16-bit kernels need no split.
void project(float* out, const float* x, int n_x, const Matrix& w, ThreadPool& pool, ProjectScratch& scratch);

// Several products of the same x in one pass over the pool (Q, K and V; the
// feed-forward's gate and up): one fork-join for all of them instead of one
// each, and x prepared once for the products of each type. A decode step runs
// ~100 of these passes; each fork-join leaves a thread idle while the last
// chunk finishes and the next activations are prepared (stories110M Q8_0:
// ~12 % of a step).
struct Product {
  float* out;
  const Matrix* w;
};
void project(std::span<const Product> products, const float* x, int n_x, ThreadPool& pool, ProjectScratch& scratch);

// Row r of W as float32 (an embedding lookup).
void row_to_f32(const Matrix& w, int64_t r, float* out);

}  // namespace h2o::cpu
