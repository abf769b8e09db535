// The cut, on the device, driven by the EvictionRule alone: a block per
// (layer, KV head) of each item whose cache is due. It keeps the sinks (the
// leading slots whose stream position is below `sinks`), the last `recent`
// slots and the `by_score` highest-scored slots between them (ties to the
// more recent slot: survival_key), writes the evicted positions in slot
// order, and compacts keys, values, pre-RoPE keys, positions and scores
// stably to the front. Under rolling positions a moved key is rotated afresh
// from its pre-RoPE copy to its new slot, as the CPU cache does.
//
// Compaction is in place, in chunks of destinations in increasing order:
// a chunk's sources are staged before any of its rows is written, and every
// destination of a chunk lies below the sources of the chunks after it
// (a survivor only moves towards the front), so no row is overwritten
// before it has been read.
#include "kernels/block_reduce.cuh"
#include "kernels/cut_shape.h"
#include "kernels/launch.h"
#include "kernels/rope.cuh"

namespace h2o::kern {
namespace {

constexpr int kChunk = 16;  // rows staged at once

template <class T>
__global__ void evict_kernel(const ItemDesc* items, ModelDims d, int32_t* evicted, int* order, int order_stride) {
  __shared__ int counts[1025];
  __shared__ int sink_partials[32];
  __shared__ float stage_k[kChunk][kMaxHeadDim];
  __shared__ float stage_v[kChunk][kMaxHeadDim];
  __shared__ int32_t stage_pos[kChunk];
  __shared__ float stage_score[kChunk];
  __shared__ double freq[kMaxHeadDim / 2];

  const ItemDesc& it = items[blockIdx.y];
  if (!it.cut) return;  // the grid covers every item, so one graph serves any set of cuts
  const int layer = int(blockIdx.x) / d.kv_heads, g = int(blockIdx.x) % d.kv_heads;
  const int n = it.n_before + it.rows, hd = d.head_dim;
  const size_t head = (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap);
  int32_t* pos = it.cache.pos + head;
  float* score = it.cache.score + head;
  T* keys = static_cast<T*>(it.cache.k) + head * hd;
  T* values = static_cast<T*>(it.cache.v) + head * hd;
  T* raw = it.rolling ? static_cast<T*>(it.cache.k_raw) + head * hd : nullptr;
  int* src_of = order + size_t(blockIdx.y * gridDim.x + blockIdx.x) * size_t(order_stride);
  const int tid = int(threadIdx.x), threads = int(blockDim.x);

  // Sinks: positions ascend with slots, so they are the slots below the rule's position.
  int below = 0;
  for (int j = tid; j < n; j += threads) below += pos[j] < it.sinks ? 1 : 0;
  const int sinks = block_reduce(below, Sum{}, 0, sink_partials);
  const CutShape cut = cut_shape(n, sinks, it.recent, it.by_score);

  // The by_score-th largest survival key of the middle slots: the threshold to stay.
  unsigned long long threshold = ~0ull;
  if (cut.by_score > 0)
    threshold = block_kth_largest(cut.sinks, cut.recent_begin, cut.by_score,
                                  [&](int j) -> unsigned long long { return survival_key(score[j], j); });
  const auto stays = [&](int j) {
    return j < cut.sinks || j >= cut.recent_begin || (cut.by_score > 0 && survival_key(score[j], j) >= threshold);
  };

  // Each thread takes a contiguous range of slots: its kept count, then the
  // prefix over the threads gives every slot its destination (or, evicted,
  // its place in the evicted list).
  const int per = (n + threads - 1) / threads;
  const int begin = imin(n, tid * per), end = imin(n, begin + per);
  int mine = 0;
  for (int j = begin; j < end; ++j) mine += stays(j) ? 1 : 0;
  int total = 0;
  int dst = block_exclusive_scan(mine, counts, &total);
  const int evicted_here = n - it.kept;
  int32_t* out = evicted + it.evicted_base + size_t(blockIdx.x) * size_t(evicted_here);
  for (int j = begin; j < end; ++j) {
    if (stays(j)) {
      if (dst < order_stride) src_of[dst] = j;
      ++dst;
    } else {
      const int e = j - dst;  // slots before j that left
      if (e < evicted_here) out[e] = pos[j];
    }
  }
  const int half = hd / 2;
  if (raw)
    for (int i = tid; i < half; i += threads) freq[i] = d.rope_freq[i];
  __syncthreads();  // src_of and freq are complete
  if (total != it.kept) {
    // The host counted otherwise: a bug, not a device state. Leave the cache
    // as it is and mark the evicted list, which the host checks.
    if (tid == 0)
      for (int e = 0; e < evicted_here; ++e) out[e] = -1;
    return;
  }

  for (int d0 = 0; d0 < total; d0 += kChunk) {
    const int rows = imin(kChunk, total - d0);
    for (int e = tid; e < rows * hd; e += threads) {
      const int r = e / hd, c = e % hd, src = src_of[d0 + r];
      stage_k[r][c] = to_f32((raw ? raw : keys)[size_t(src) * hd + c]);
      stage_v[r][c] = to_f32(values[size_t(src) * hd + c]);
    }
    for (int r = tid; r < rows; r += threads) {
      stage_pos[r] = pos[src_of[d0 + r]];
      stage_score[r] = score[src_of[d0 + r]];
    }
    __syncthreads();
    for (int e = tid; e < rows * hd; e += threads) {
      const int r = e / hd, c = e % hd, to = d0 + r;
      if (src_of[to] == to) continue;  // did not move
      values[size_t(to) * hd + c] = from_f32<T>(stage_v[r][c]);
      if (!raw) {
        keys[size_t(to) * hd + c] = from_f32<T>(stage_k[r][c]);
        continue;
      }
      raw[size_t(to) * hd + c] = from_f32<T>(stage_k[r][c]);
      if (c % 2 == 0) {
        const double a = double(to) * freq[c / 2];
        float y0, y1;
        rope_rotate(stage_k[r][c], stage_k[r][c + 1], float(cos(a)), float(sin(a)), &y0, &y1);
        keys[size_t(to) * hd + c] = from_f32<T>(y0);
        keys[size_t(to) * hd + c + 1] = from_f32<T>(y1);
      }
    }
    for (int r = tid; r < rows; r += threads) {
      pos[d0 + r] = stage_pos[r];
      score[d0 + r] = stage_score[r];
    }
    __syncthreads();
  }
}

}  // namespace

void evict(DType dtype, const ItemDesc* items, int item_count, const ModelDims& dims, int32_t* evicted, int* order,
           int order_stride, int threads, gpu::Stream stream) {
  if (item_count == 0) return;
  const dim3 grid(unsigned(dims.layers * dims.kv_heads), unsigned(item_count));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(grid, dim3(unsigned(threads)), stream, evict_kernel<T>)(items, dims, evicted, order,
                                                                                     order_stride));
  gpu::check_launch("evict");
}

}  // namespace h2o::kern
