#pragma once
// The split-K attention's combine, folded into the attention kernels
// themselves (attention_common.cuh): the last split block of a (query tile,
// KV head) to finish merges the splits of that tile's queries. A separate
// combine launch per layer (32 a step at Llama-2-7B) would wait for the
// slowest split and then run a few microseconds on a few dozen blocks; folded,
// each tile's combine runs as soon as its own splits are in, beside the other
// tiles' keys.
//
// The handover is the threadFenceReduction pattern: each block fences its
// partials, then counts itself in on the tile's counter with one atomic; the
// block that brings the count to the tile's live splits resets the counter
// (for the next layer and the next replay of a graph) and reads the others'
// partials from L2 (__ldcg: its own L1 may not have seen them).
//
// Per query (row, head): the softmax's max M and sum Z over the splits the
// row sees (block reductions in a fixed order, so deterministic whichever
// block arrives last), then each channel's sum over the splits rescaled and
// normalised, in the output type (the output projection's input); M and 1/Z
// are kept for attention_scores. Where the output projection takes 8-bit
// inputs the block writes its head's blocks of 32 of them too
// (int8_quantize.cuh; a head_dim that is a multiple of 32, so no block
// straddles two heads).
#include <string>

#include "core/base/error.h"
#include "kernels/block_reduce.cuh"
#include "kernels/int8_quantize.cuh"
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {

// The launchers' check of `out`: 8-bit rows only beside f32 heads of whole blocks of 32.
inline void check_output(const ModelDims& d, const AttentionOutput& out, const char* kernel) {
  if (out.int8.in != 0 && (out.type != DType::F32 || d.head_dim % kInt8BlockElems != 0 || out.int8.in != d.q_dim))
    throw Error(std::string(kernel) + ": 8-bit rows of " + std::to_string(out.int8.in) + " for heads of " +
                std::to_string(d.head_dim) + " (f32, a multiple of 32 and the query width; a bug)");
}

// The splits that hold a key a row seeing `visible` keys sees: the splits a
// tile's last row sees are its live blocks (split_keys_of), and each row's
// combine reads its own.
__device__ __forceinline__ int splits_seen(int visible, int split_keys) {
  return (visible + split_keys - 1) / split_keys;
}

// Query (row, head) of the batch, seeing `visible` keys: its splits'
// partials (`p`: [split][head_dim + 2]) to its output and stats. `scratch`:
// 32 shared floats.
__device__ __forceinline__ void combine_query(const float* p, int row, int head, int visible, const ModelDims& d,
                                              const AttentionScratch& s, const AttentionOutput& out,
                                              SharedPtr<float> scratch) {
  const int tid = int(threadIdx.x), step = int(blockDim.x);
  const int splits = splits_seen(visible, s.split_keys);
  const int hd = d.head_dim, width = hd + 2;

  // The largest of the splits' maxima, then the sum of their sums rescaled to it.
  float m = -INFINITY;
  for (int k = tid; k < splits; k += step) m = fmaxf(m, __ldcg(p + k * width + hd));
  m = block_reduce(m, Max{}, -INFINITY, scratch);
  float z = 0.0f;
  for (int k = tid; k < splits; k += step) z += __ldcg(p + k * width + hd + 1) * expf(__ldcg(p + k * width + hd) - m);
  const float inv = 1.0f / block_reduce(z, Sum{}, 0.0f, scratch);

  // Each channel: the splits' unnormalised outputs, rescaled and normalised.
  const size_t head_at = size_t(row) * d.q_dim + size_t(head) * hd;
  for (int c = tid; c < hd; c += step) {
    float o = 0.0f;
    for (int k = 0; k < splits; ++k) o += __ldcg(p + k * width + c) * expf(__ldcg(p + k * width + hd) - m);
    H2O_WITH_STORAGE(out.type, T, static_cast<T*>(out.heads)[head_at + size_t(c)] = from_f32<T>(o * inv));
  }
  if (out.int8.in != 0)  // f32 heads (checked at the launch): the block's own writes, after quantize_span's barrier
    quantize_span_int8(static_cast<const float*>(out.heads) + head_at, out.int8, row, head * hd / kInt8BlockElems,
                       hd / kInt8BlockElems);
  if (tid == 0) {
    s.stats[(size_t(row) * d.heads + size_t(head)) * 2] = m;
    s.stats[(size_t(row) * d.heads + size_t(head)) * 2 + 1] = inv;
  }
}

// After a split block's merge (a barrier, every thread): if it is the last
// of its tile's live splits to finish, the tile's queries combined (its rows
// x the group's heads of KV head blockIdx.y). The block's tile and item are
// read again from `tiles` and `items`, so nothing of the combine's is held
// through the keys.
__device__ __forceinline__ void combine_if_last(const ItemDesc* items, const RowTile* tiles, const ModelDims& d,
                                                const AttentionScratch& s, const AttentionOutput& out) {
  H2O_SHARED(float, combine_slots, [32]);
  H2O_SHARED(int, last_flag, [1]);
  __threadfence();  // this block's partials are visible device-wide before it counts itself in
  __syncthreads();
  const RowTile& tile = tiles[blockIdx.x];
  const ItemDesc& it = items[tile.item];
  const int kv_head = int(blockIdx.y), row_begin = tile.row_begin, rows = tile.row_count;
  const int first_row = it.first_row + row_begin;
  const int first_visible = it.n_before + row_begin + 1;  // keys the tile's first row sees
  if (threadIdx.x == 0) {
    // One counter per (tile, KV head), at the tile's first row (tiles partition the rows);
    // the live blocks, those of the splits the tile's last row sees, count themselves in.
    const int live = splits_seen(first_visible + rows - 1, s.split_keys);
    int* counter = s.arrivals + size_t(first_row) * d.kv_heads + kv_head;
    const bool last = atomicAdd(counter, 1) == live - 1;
    if (last) *counter = 0;  // all in: none reads it again this launch; the next layer (or replay) starts at zero
    last_flag[0] = last ? 1 : 0;
  }
  __syncthreads();
  if (last_flag[0] == 0) return;
  __threadfence();  // the others' partials, fenced before their count, are read after ours
  for (int q = 0; q < rows * d.group; ++q) {
    const int r = q / d.group, head = kv_head * d.group + q % d.group;
    const int row = first_row + r;
    const float* p = s.partials + (size_t(row) * d.heads + size_t(head)) * size_t(s.split_bucket) * (d.head_dim + 2);
    combine_query(p, row, head, first_visible + r, d, s, out, combine_slots);
  }
}

}  // namespace H2O_KERN_NS
