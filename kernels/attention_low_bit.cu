// Split-K attention over quantized caches (SEMANTICS.md, "KV precision"):
// the block's work is attention_common.cuh's; this file says how a lane reads
// its chunk of eight channels of a key or value from the runs of a
// LowBitView. A sink or residual slot is an f16 row (one 16-byte load); a
// quantized slot is read straight from its codes — eight codes of one plane
// are eight consecutive bytes of the packed row (one 8-byte load), each
// read back as m + code * s with its key group's per-channel numbers or its
// value run's — so no dequantized copy of the cache is ever made.
#include <cstdint>
#include <cstring>

#include "kernels/attention_common.cuh"
#include "kernels/low_bit_rows.cuh"

namespace H2O_KERN_NS {
namespace {

constexpr int kLanes = 8;  // channels of a lane's chunk: one 16-byte load of f16

// Eight f16 at p (count of them, zeros after), widened.
__device__ __forceinline__ void f16_chunk(const uint16_t* p, int count, bool vector, float (&out)[kLanes]) {
  uint16_t e[kLanes] = {};
  if (vector) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
    memcpy(e, &u, sizeof u);
  } else {
    for (int i = 0; i < count; ++i) e[i] = __ldg(p + i);
  }
  H2O_UNROLL
  for (int i = 0; i < kLanes; ++i) out[i] = i < count ? half_bits_to_f32(e[i]) : 0.0f;
}

// One (layer, KV head) of a quantized cache, as attention reads it: a key's
// K and V chunks read back together when it is loaded (no stores between the
// unrolled keys' reads, so all their loads may be in flight at once).
struct LowBitRows {
  static constexpr int N = kLanes;
  // Half the f16 cache's: a key read back holds twice the registers of its raw chunks.
  __host__ __device__ static constexpr int unroll(int queries) { return queries <= 2 ? 2 : 1; }
  struct Raw {
    float k[kLanes], v[kLanes];
  };
  LowBitView h;
  bool planes_whole = false;  // every chunk's codes are eight consecutive bytes of one plane, 8-byte aligned

  __device__ Raw load(const Layout& L, int key) const {
    Raw r;
    read(L, key, true, r.k);
    read(L, key, false, r.v);
    return r;
  }
  __device__ void key(const Layout&, const Raw& r, float (&k)[N]) const {
    H2O_UNROLL
    for (int i = 0; i < N; ++i) k[i] = r.k[i];
  }
  __device__ void value(const Layout&, const Raw& r, float (&v)[N]) const {
    H2O_UNROLL
    for (int i = 0; i < N; ++i) v[i] = r.v[i];
  }

  // This lane's chunk of slot's key or value, as SEMANTICS.md reads it back.
  __device__ void read(const Layout& L, int slot, bool keys, float (&out)[N]) const {
    const int c0 = L.chunk * N;
    if (slot < 0 || L.count == 0) {
      H2O_UNROLL
      for (int i = 0; i < N; ++i) out[i] = 0.0f;
      return;
    }
    const kvq::Shape& sh = h.shape;
    if (!h.runs.quantized_slot(slot)) {
      const uint16_t* full = keys ? h.full_k : h.full_v;
      return f16_chunk(full + size_t(h.runs.full_row(slot)) * sh.hd + c0, L.count, L.vector, out);
    }
    const int row = slot - h.runs.sinks, bits = keys ? sh.key_bits : sh.value_bits;
    const int row_bytes = keys ? sh.key_row_bytes() : sh.value_row_bytes();
    const uint8_t* packed = (keys ? h.quant_k : h.quant_v) + size_t(row) * row_bytes;
    if (bits == 16)  // this half kept at f16 in the quantized run
      return f16_chunk(reinterpret_cast<const uint16_t*>(packed) + c0, L.count, L.vector, out);
    // Codes: eight bytes of one plane where the row allows, else one by one.
    uint32_t codes[N];
    if (planes_whole) {
      const int stride = row_bytes, shift = (c0 / stride) * bits;
      const uint2 bytes = __ldg(reinterpret_cast<const uint2*>(packed + c0 % stride));
      H2O_UNROLL
      for (int i = 0; i < N; ++i) {
        const uint32_t byte = ((i < 4 ? bytes.x : bytes.y) >> (8 * (i % 4))) & 0xffu;
        codes[i] = (byte >> shift) & ((1u << bits) - 1u);
      }
    } else {
      H2O_UNROLL
      for (int i = 0; i < N; ++i) codes[i] = i < L.count ? kvq::code_at(packed, sh.hd, bits, c0 + i) : 0u;
    }
    uint32_t scales[N];
    if (keys)
      key_scales(L, h.key_scales + size_t(__ldg(h.group_of + row)) * sh.hd + c0, scales);
    else
      value_scales(L, h.value_scales + size_t(row) * sh.value_runs(), c0, scales);
    H2O_UNROLL
    for (int i = 0; i < N; ++i) out[i] = i < L.count ? read_back(codes[i], scales[i]) : 0.0f;
  }

  // The chunk's channels' numbers in their key group: two 16-byte loads on the vector path.
  __device__ static void key_scales(const Layout& L, const uint32_t* at, uint32_t (&out)[N]) {
    if (L.vector) {
      const uint4 a = __ldg(reinterpret_cast<const uint4*>(at)), b = __ldg(reinterpret_cast<const uint4*>(at + 4));
      const uint32_t both[N] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      H2O_UNROLL
      for (int i = 0; i < N; ++i) out[i] = both[i];
      return;
    }
    H2O_UNROLL
    for (int i = 0; i < N; ++i) out[i] = i < L.count ? __ldg(at + i) : 0u;
  }
  // The numbers of the value runs the chunk's channels fall in: one load where a run holds the whole chunk.
  __device__ void value_scales(const Layout& L, const uint32_t* runs, int c0, uint32_t (&out)[N]) const {
    const int G = h.shape.group;
    if (G % N == 0) {
      const uint32_t one = __ldg(runs + c0 / G);
      H2O_UNROLL
      for (int i = 0; i < N; ++i) out[i] = one;
      return;
    }
    H2O_UNROLL
    for (int i = 0; i < N; ++i) out[i] = i < L.count ? __ldg(runs + (c0 + i) / G) : 0u;
  }
};

template <int Q>
__global__ void __launch_bounds__(kAttentionThreads)
    attention_low_bit_kernel(const float* qkv, const ItemDesc* items, const RowTile* tiles, int layer, ModelDims d,
                             float scale, AttentionScratch s) {
  H2O_SHARED(float, sm_acc, [kAttentionWarps * 32 * kLanes * Q]);
  H2O_SHARED(float, sm_ml, [kAttentionWarps * 32 * Q * 2]);

  const RowTile tile = tiles[blockIdx.z];
  const ItemDesc& it = items[tile.item];
  const SplitKeys k = split_keys_of(it, tile, s.split_keys);
  if (!k.live) return;  // the whole block: no barrier is skipped by a part of it
  LowBitRows rows;
  rows.h = low_bit_view(it.cache, layer, k.kv_head, d.kv_heads);
  // f16 rows are 16-byte aligned where head_dim is a multiple of 8 (allocations are 256-byte aligned).
  const bool vector = d.head_dim % kLanes == 0;
  rows.planes_whole =
      vector && rows.h.shape.key_row_bytes() % kLanes == 0 && rows.h.shape.value_row_bytes() % kLanes == 0;
  const Layout L = make_layout(d.head_dim, kLanes, vector);
  attention_block<LowBitRows, Q>(rows, L, qkv, it, tile, k, d, scale, s, sm_acc, sm_ml);
}

}  // namespace

void attention_low_bit(const float* qkv, const ItemDesc* items, const RowTile* tiles, int tile_count, int tile_queries,
                       int layer, const ModelDims& dims, const AttentionScratch& s, gpu::Stream stream) {
  if (tile_count == 0) return;
  const float scale = 1.0f / sqrtf(float(dims.head_dim));
  const dim3 grid(unsigned(s.split_bucket), unsigned(dims.kv_heads), unsigned(tile_count));
  const dim3 block{unsigned(kAttentionThreads)};
  for_tile_queries(tile_queries, [&](auto q) {
    H2O_LAUNCH(grid, block, stream, attention_low_bit_kernel<decltype(q)::value>)(qkv, items, tiles, layer, dims, scale,
                                                                                  s);
  });
  gpu::check_launch("attention_low_bit");
}

}  // namespace H2O_KERN_NS
