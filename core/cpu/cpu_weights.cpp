#include "core/cpu/cpu_weights.h"

#include <algorithm>
#include <cstring>

#include "core/base/mapped_file.h"
#include "core/cpu/cpu_ops.h"

namespace h2o::cpu {

const float* Weights::widened(const Tensor& t) {
  auto& copy = copies_.emplace_back(new float[size_t(t.numel())]);
  convert_to_f32(t.data, t.dtype, size_t(t.numel()), copy.get());
  return copy.get();
}

Matrix Weights::matrix(const Tensor& t, bool projected) {
  Matrix m{t.data, t.dtype, t.rows, t.cols};
  // The typed kernels read activations in runs of 32 (and of their block).
  if (t.dtype != DType::F32 && t.cols % 32 != 0) m = {widened(t), DType::F32, t.rows, t.cols};
  bytes_read_ += m.bytes();
  if (!projected || m.data != t.data) return m;  // an embedding read row by row, or a widened copy
  if (tiles_available(m.type) && m.rows >= kTileRows) {
    m.tile_count = m.rows / kTileRows;
    uint8_t* tiles = arena_space(size_t(m.tile_count) * tile_bytes(m.type, m.cols));
    make_tiles(m.type, m.data, m.rows, m.cols, tiles);
    m.tiles = tiles;
    // Only the tiles are read from now on (embedding rows aside): the file's copy of them may leave memory.
    reclaim_pages(m.data, size_t(m.tile_count * kTileRows) * row_bytes(m.type, m.cols));
  } else {
    // The rows as they are, on huge pages; the file's copy may leave memory.
    uint8_t* rows = arena_space(size_t(m.bytes()));
    std::memcpy(rows, m.data, size_t(m.bytes()));
    reclaim_pages(m.data, size_t(m.bytes()));
    m.data = rows;
  }
  return m;
}

uint8_t* Weights::arena_space(size_t bytes) {
  constexpr size_t kArena = size_t(256) << 20, kAlign = 64;
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  if (arenas_.empty() || arena_used_ + bytes > arenas_.back().size()) {
    arenas_.emplace_back(std::max(kArena, bytes));
    arena_used_ = 0;
  }
  uint8_t* p = arenas_.back().data() + arena_used_;
  arena_used_ += bytes;
  return p;
}

const float* Weights::vector(const Tensor& t) {
  if (!t.data) return nullptr;
  bytes_read_ += t.numel() * int64_t(sizeof(float));
  return t.dtype == DType::F32 ? t.f32() : widened(t);
}

void project(float* out, const float* x, int n_x, const Matrix& w, ThreadPool& pool, ProjectScratch& scratch) {
  if (w.type == DType::F32) {
    matmul(out, x, static_cast<const float*>(w.data), n_x, int(w.cols), int(w.rows), pool);
    return;
  }
  QuantizedActs& acts = scratch.acts;
  const size_t cols = size_t(w.cols);
  const bool split = eight_bit(activation_format(w.type));
  int rows_in = n_x;
  float* result = out;
  if (split) {
    // Rows 2t and 2t+1: x[t] and what its 8-bit form misses.
    acts.prepare(w.type, x, n_x, w.cols);
    scratch.split.resize(2 * size_t(n_x) * cols);
    for (int t = 0; t < n_x; ++t) {
      float* first = &scratch.split[2 * size_t(t) * cols];
      std::copy(x + size_t(t) * cols, x + size_t(t + 1) * cols, first);
      for (size_t i = 0; i < cols; ++i) first[cols + i] = first[i] - acts.value(t, int64_t(i));
    }
    rows_in = 2 * n_x;
    scratch.products.resize(size_t(rows_in) * size_t(w.rows));
    result = scratch.products.data();
  }
  acts.prepare(w.type, split ? scratch.split.data() : x, rows_in, w.cols);
  matvec_rows(w.type, w.data, w.cols, 0, 0, acts, result, w.rows);  // the checks, here rather than on a worker
  // Units of work: the tiles, if any, then each row past them.
  const int64_t tiled_rows = w.tile_count * kTileRows;
  const int units = int(w.tile_count + (w.rows - tiled_rows));
  auto run = [&](int begin, int end) {
    if (begin < w.tile_count)
      matvec_tiles(w.type, w.tiles, w.cols, begin, std::min<int64_t>(end, w.tile_count), acts, result, w.rows);
    const int64_t first = tiled_rows + std::max<int64_t>(0, begin - w.tile_count);
    const int64_t last = tiled_rows + std::max<int64_t>(0, end - w.tile_count);
    matvec_rows(w.type, w.data, w.cols, first, last, acts, result, w.rows);
  };
  // As matmul: small products stay on one thread; a few chunks per thread otherwise.
  const int grain = std::max(w.tile_count > 0 ? 1 : 16, units / (pool.size() * 4));
  if (pool.size() == 1 || size_t(w.rows) * cols * size_t(n_x) < kParallelMinWork) run(0, units);
  else pool.parallel_for(units, grain, run);
  if (!split) return;
  for (int t = 0; t < n_x; ++t) {
    const float* a = &result[2 * size_t(t) * size_t(w.rows)];
    const float* b = a + w.rows;
    float* o = out + size_t(t) * size_t(w.rows);
    for (int64_t r = 0; r < w.rows; ++r) o[r] = a[r] + b[r];
  }
}

void row_to_f32(const Matrix& w, int64_t r, float* out) {
  convert_to_f32(static_cast<const uint8_t*>(w.data) + size_t(r) * row_bytes(w.type, w.cols), w.type, size_t(w.cols), out);
}

}  // namespace h2o::cpu
