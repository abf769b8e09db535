// Split-K attention (flash-decoding) over caches that keep their keys and
// values as rows of the storage type, laid out as the fast decoders lay it
// out (llama.cpp's fattn-vec, FlashInfer's decode kernel); the block's work is
// attention_common.cuh's, this file says how a lane reads a row: one 16-byte
// chunk (eight halves or four floats) loaded straight from global memory into
// registers, widened to f32 where it is used.
//
// A head_dim that is not a multiple of the chunk (or a cache that is not
// 16-byte aligned) takes the same path with each chunk read element by
// element. The block size is the kernel's own, so results do not depend on
// the tuning.
#include <cstdint>
#include <cstring>

#include "kernels/attention_common.cuh"

namespace H2O_KERN_NS {
namespace {

// Elements of a K or V row in one lane's 16-byte chunk.
template <class T>
constexpr int kChunk = 16 / int(sizeof(T));

// The chunk at p, `count` elements of it (zeros after): one 16-byte load on
// the vector path, element by element otherwise.
template <class T>
__device__ __forceinline__ uint4 load_chunk(const T* p, int count, bool vector) {
  if (vector) return __ldg(reinterpret_cast<const uint4*>(p));
  uint4 u = make_uint4(0u, 0u, 0u, 0u);
  H2O_UNROLL
  for (int i = 0; i < kChunk<T>; ++i)
    if (i < count) {
      const T e = __ldg(p + i);
      memcpy(reinterpret_cast<char*>(&u) + i * int(sizeof(T)), &e, sizeof(T));
    }
  return u;
}

template <class T>
__device__ __forceinline__ void widen(const uint4& u, float (&out)[kChunk<T>]) {
  T e[kChunk<T>];
  memcpy(e, &u, sizeof(u));
  H2O_UNROLL
  for (int i = 0; i < kChunk<T>; ++i) out[i] = to_f32(e[i]);
}

// One (layer, KV head) of a cache of T rows: a key's K and V chunks loaded
// together as they are (widened where used, to spare registers).
template <class T>
struct StoredRows {
  static constexpr int N = kChunk<T>;
  __host__ __device__ static constexpr int unroll(int queries) { return queries <= 2 ? 4 : queries == 4 ? 2 : 1; }
  struct Raw {
    uint4 k, v;
  };
  const T* keys;
  const T* values;

  __device__ Raw load(const Layout& L, int key) const {
    if (key < 0) return {make_uint4(0u, 0u, 0u, 0u), make_uint4(0u, 0u, 0u, 0u)};
    const size_t at = size_t(key) * size_t(L.hd) + size_t(L.chunk) * N;
    return {load_chunk(keys + at, L.count, L.vector), load_chunk(values + at, L.count, L.vector)};
  }
  __device__ void key(const Layout&, const Raw& r, float (&k)[N]) const { widen<T>(r.k, k); }
  __device__ void value(const Layout&, const Raw& r, float (&v)[N]) const { widen<T>(r.v, v); }
};

template <class T, int Q>
__global__ void __launch_bounds__(kAttentionThreads, attention_min_blocks(Q))
    attention_partial_kernel(const float* qkv, const ItemDesc* items, const RowTile* tiles, int layer, ModelDims d,
                             float scale, AttentionScratch s, AttentionOutput out) {
  constexpr int N = kChunk<T>;
  // Bounds: groups x head_dim <= 32 lanes x N per warp.
  H2O_SHARED(float, sm_acc, [kAttentionWarps * 32 * N * Q]);
  H2O_SHARED(float, sm_ml, [kAttentionWarps * 32 * Q * 2]);

  // A reference: the split is read again after the keys, not held across them
  // (held, the f32 instance at one query spilled 4 bytes; ptxas -v).
  const RowTile& tile = tiles[blockIdx.x];
  const ItemDesc& it = items[tile.item];
  const SplitKeys k = split_keys_of(it, tile, s.split_keys);
  if (!k.live) return;  // the whole block: no barrier is skipped by a part of it
  const size_t head_base = (size_t(layer) * d.kv_heads + k.kv_head) * size_t(it.cache.cap) * d.head_dim;
  StoredRows<T> rows{static_cast<const T*>(it.cache.k) + head_base, static_cast<const T*>(it.cache.v) + head_base};
  const uintptr_t bases = reinterpret_cast<uintptr_t>(rows.keys) | reinterpret_cast<uintptr_t>(rows.values);
  const Layout L = make_layout(d.head_dim, N, d.head_dim % N == 0 && bases % 16 == 0);
  attention_block<StoredRows<T>, Q>(rows, L, qkv, it, tile, k, d, scale, s, sm_acc, sm_ml);
  combine_if_last(items, tiles, d, s, out);
}

template <class T>
void launch(int tile_queries, dim3 grid, gpu::Stream stream, const float* qkv, const ItemDesc* items,
            const RowTile* tiles, int layer, const ModelDims& d, float scale, const AttentionScratch& s,
            const AttentionOutput& out) {
  const dim3 block{unsigned(kAttentionThreads)};
  for_tile_queries(tile_queries, [&](auto q) {
    H2O_LAUNCH(grid, block, stream, attention_partial_kernel<T, decltype(q)::value>)(qkv, items, tiles, layer, d,
                                                                                     scale, s, out);
  });
}

}  // namespace

void attention_partial(DType dtype, const float* qkv, const ItemDesc* items, const RowTile* tiles, int tile_count,
                       int tile_queries, int layer, const ModelDims& dims, const AttentionScratch& s,
                       const AttentionOutput& out, gpu::Stream stream) {
  if (tile_count == 0) return;
  check_output(dims, out, "attention_partial");
  const float scale = 1.0f / sqrtf(float(dims.head_dim));
  const dim3 grid(unsigned(tile_count), unsigned(dims.kv_heads));
  H2O_WITH_STORAGE(dtype, T, launch<T>(tile_queries, grid, stream, qkv, items, tiles, layer, dims, scale, s, out));
  gpu::check_launch("attention_partial");
}

}  // namespace H2O_KERN_NS
