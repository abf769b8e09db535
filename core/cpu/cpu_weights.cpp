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
  if (!projected || m.data != t.data) {  // an embedding read row by row, or a widened copy
    bytes_read_ += m.bytes();
    return m;
  }
  if (tiles_available(m.type) && m.rows >= kTileRows) {
    m.tile_count = m.rows / kTileRows;
    const size_t bytes = size_t(m.tile_count) * tile_bytes(m.type, m.cols);
    // What a step reads: the tiles, then the rows past them.
    bytes_read_ += int64_t(bytes) + (m.rows - m.tile_count * kTileRows) * int64_t(row_bytes(m.type, m.cols));
    uint8_t* tiles = arena_space(bytes);
    make_tiles(m.type, m.data, m.rows, m.cols, tiles);
    m.tiles = tiles;
    // Only the tiles are read from now on (embedding rows aside): the file's copy of them may leave memory.
    reclaim_pages(m.data, size_t(m.tile_count * kTileRows) * row_bytes(m.type, m.cols));
  } else {
    // The rows as they are, on huge pages; the file's copy may leave memory.
    bytes_read_ += m.bytes();
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

namespace {

// One product of a fused pass: the activations its kernels read, where they
// write (out, or the two-term rows of an 8-bit product), and its units of
// work within the pass: its tiles, then each row past them.
struct Pass {
  const Matrix* w;
  const QuantizedActs* acts;
  float* out;
  float* result;
  int first_unit, units;
};

}  // namespace

void project(std::span<const Product> products, const float* x, int n_x, ThreadPool& pool, ProjectScratch& scratch) {
  const size_t n = products.size();
  if (scratch.acts.size() < n) scratch.acts.resize(n);
  if (scratch.split.size() < n) scratch.split.resize(n);
  if (scratch.products.size() < n) scratch.products.resize(n);
  std::vector<Pass> passes;
  int units = 0;
  size_t work = 0;  // multiply-adds of the pass
  for (size_t j = 0; j < n; ++j) {
    const Matrix& w = *products[j].w;
    float* out = products[j].out;
    const size_t cols = size_t(w.cols);
    QuantizedActs& acts = scratch.acts[j];
    Pass pass{&w, &acts, out, out, units, int(w.tile_count + (w.rows - w.tile_count * kTileRows))};
    if (eight_bit(activation_format(w.type))) {
      // Rows 2t and 2t+1: x[t] and what its 8-bit form misses.
      acts.prepare(w.type, x, n_x, w.cols);
      std::vector<float>& split = scratch.split[j];
      split.resize(2 * size_t(n_x) * cols);
      for (int t = 0; t < n_x; ++t) {
        float* first = &split[2 * size_t(t) * cols];
        std::copy(x + size_t(t) * cols, x + size_t(t + 1) * cols, first);
        for (size_t i = 0; i < cols; ++i) first[cols + i] = first[i] - acts.value(t, int64_t(i));
      }
      acts.prepare(w.type, split.data(), 2 * n_x, w.cols);
      scratch.products[j].resize(2 * size_t(n_x) * size_t(w.rows));
      pass.result = scratch.products[j].data();
    } else {
      // Products of one type and width read the same prepared activations.
      const auto same = std::find_if(passes.begin(), passes.end(), [&](const Pass& p) {
        return p.w->type == w.type && p.w->cols == w.cols && p.result == p.out;
      });
      if (same != passes.end()) pass.acts = same->acts;
      else acts.prepare(w.type, x, n_x, w.cols);
    }
    matvec_rows(w.type, w.data, w.cols, 0, 0, *pass.acts, pass.result, w.rows);  // the checks, here rather than on a worker
    passes.push_back(pass);
    units += pass.units;
    work += size_t(w.rows) * cols * size_t(pass.acts->n_x());
  }
  if (passes.empty()) return;

  // Units [begin, end) of the whole pass, product by product.
  auto run = [&](int begin, int end) {
    for (const Pass& p : passes) {
      const int lo = std::max(begin, p.first_unit) - p.first_unit;
      const int hi = std::min(end, p.first_unit + p.units) - p.first_unit;
      if (lo >= hi) continue;
      const Matrix& w = *p.w;
      const int64_t tiled_rows = w.tile_count * kTileRows;
      if (lo < w.tile_count)
        matvec_tiles(w.type, w.tiles, w.cols, lo, std::min<int64_t>(hi, w.tile_count), *p.acts, p.result, w.rows);
      const int64_t first = tiled_rows + std::max<int64_t>(0, lo - w.tile_count);
      const int64_t last = tiled_rows + std::max<int64_t>(0, hi - w.tile_count);
      matvec_rows(w.type, w.data, w.cols, first, last, *p.acts, p.result, w.rows);
    }
  };
  // Small products stay on one thread (waking the team costs more than they
  // do); a few chunks per thread otherwise, so that a thread the OS delays
  // does not hold up the rest.
  const bool tiled = std::any_of(passes.begin(), passes.end(), [](const Pass& p) { return p.w->tile_count > 0; });
  const int grain = std::max(tiled ? 1 : 16, units / (pool.size() * 4));
  if (pool.size() == 1 || work < kParallelMinWork) run(0, units);
  else pool.parallel_for(units, grain, run);

  // An 8-bit product's outputs: the sums of its two terms.
  for (const Pass& p : passes) {
    if (p.result == p.out) continue;
    const int64_t rows = p.w->rows;
    for (int t = 0; t < n_x; ++t) {
      const float* a = &p.result[2 * size_t(t) * size_t(rows)];
      const float* b = a + rows;
      float* o = p.out + size_t(t) * size_t(rows);
      for (int64_t r = 0; r < rows; ++r) o[r] = a[r] + b[r];
    }
  }
}

void project(float* out, const float* x, int n_x, const Matrix& w, ThreadPool& pool, ProjectScratch& scratch) {
  const Product one{out, &w};
  project(std::span<const Product>(&one, 1), x, n_x, pool, scratch);
}

void row_to_f32(const Matrix& w, int64_t r, float* out) {
  convert_to_f32(static_cast<const uint8_t*>(w.data) + size_t(r) * row_bytes(w.type, w.cols), w.type, size_t(w.cols), out);
}

}  // namespace h2o::cpu
