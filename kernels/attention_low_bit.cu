// Split-K attention over quantized caches (SEMANTICS.md, "KV precision"):
// the block's work is attention_common.cuh's; this file says how a lane reads
// its chunk of eight channels of a key or value from the runs of a
// LowBitView. A sink or residual slot is an f16 row (one 16-byte load); a
// quantized slot is read straight from its codes — eight codes of one plane
// are eight consecutive bytes of the packed row (one 8-byte load), each
// read back as m + code * s — so no dequantized copy of the cache is ever made.
//
// What a key's loads bring is kept raw (codes, f16 bits, its value run's
// number, its key group) until it is used, so a lane has several keys' loads
// in flight, as over an f16 cache. A key group's per-channel numbers are the
// same for all its G tokens: each lane keeps its chunk's eight (m, s) widened
// to f32 in registers and reloads them only where its keys cross into another
// group (every G tokens, or at a cut's seam), rather than two 16-byte loads
// and sixteen conversions a key. The read-back is the same fused m + code * s,
// so the bits do not change.
#include <cstdint>
#include <cstring>

#include "kernels/attention_common.cuh"
#include "kernels/low_bit_rows.cuh"

namespace H2O_KERN_NS {
namespace {

constexpr int kLanes = 8;  // channels of a lane's chunk: one 16-byte load of f16

// Eight f16 at p (count of them, zeros after) as they are: one 16-byte load on the vector path.
__device__ __forceinline__ uint4 f16_bits(const uint16_t* p, int count, bool vector) {
  if (vector) return __ldg(reinterpret_cast<const uint4*>(p));
  uint32_t w[4] = {0u, 0u, 0u, 0u};
  H2O_UNROLL
  for (int i = 0; i < kLanes; ++i)
    if (i < count) w[i / 2] |= uint32_t(__ldg(p + i)) << (16 * (i % 2));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ void widen_f16(const uint4& u, int count, float (&out)[kLanes]) {
  uint16_t e[kLanes];
  memcpy(e, &u, sizeof u);
  H2O_UNROLL
  for (int i = 0; i < kLanes; ++i) out[i] = i < count ? half_bits_to_f32(e[i]) : 0.0f;
}

// Code i of a Raw half: byte i of the eight held in (x, y) (x the first
// four), its `bits` from `shift` up.
__device__ __forceinline__ uint32_t code_of(const uint4& b, int i, int shift, int bits) {
  const uint32_t byte = ((i < 4 ? b.x : b.y) >> (8 * (i % 4))) & 0xffu;
  return (byte >> shift) & ((1u << bits) - 1u);
}

// One (layer, KV head) of a quantized cache, as attention reads it.
struct LowBitRows {
  static constexpr int N = kLanes;
  // As the f16 cache's: a key's raw loads hold about as many registers as its two 16-byte chunks.
  __host__ __device__ static constexpr int unroll(int queries) { return queries <= 2 ? 4 : queries == 4 ? 2 : 1; }
  static constexpr int kF16Slot = -1;  // Raw::group of a sink or residual slot
  struct Raw {
    uint4 k, v;        // a half's eight f16, or its codes a byte each in (x, y)
    uint32_t v_run;    // a quantized slot's value run number where one run holds the chunk, else its row
    int group;         // a quantized slot's key group (0 where keys keep 16 bits); kF16Slot
  };
  LowBitView h;
  bool planes_whole = false;   // every chunk's codes are eight consecutive bytes of one plane, 8-byte aligned
  int key_shift = 0, value_shift = 0;  // where this lane's codes lie in those bytes (0: gathered a byte each)
  // This lane's chunk of the numbers of the key group its last key fell in.
  int held_group = kF16Slot;
  float key_m[N], key_s[N];

  // The lane's fixed part, once its layout is known.
  __device__ void prepare(const Layout& L) {
    const kvq::Shape& sh = h.shape;
    const int c0 = L.chunk * N;
    planes_whole = L.vector && sh.key_row_bytes() % N == 0 && sh.value_row_bytes() % N == 0;
    if (planes_whole) {
      if (kvq::coded(sh.key_bits)) key_shift = (c0 / sh.key_row_bytes()) * sh.key_bits;
      if (kvq::coded(sh.value_bits)) value_shift = (c0 / sh.value_row_bytes()) * sh.value_bits;
    }
  }

  __device__ Raw load(const Layout& L, int slot) const {
    Raw r{make_uint4(0u, 0u, 0u, 0u), make_uint4(0u, 0u, 0u, 0u), 0u, kF16Slot};
    if (slot < 0 || L.count == 0) return r;
    const kvq::Shape& sh = h.shape;
    const int c0 = L.chunk * N;
    if (!h.runs.quantized_slot(slot)) {
      const size_t at = size_t(h.runs.full_row(slot)) * sh.hd + c0;
      r.k = f16_bits(h.full_k + at, L.count, L.vector);
      r.v = f16_bits(h.full_v + at, L.count, L.vector);
      return r;
    }
    const int row = slot - h.runs.sinks;
    r.k = half_row(L, h.quant_k + size_t(row) * sh.key_row_bytes(), sh.key_bits, sh.key_row_bytes(), c0);
    r.v = half_row(L, h.quant_v + size_t(row) * sh.value_row_bytes(), sh.value_bits, sh.value_row_bytes(), c0);
    r.group = kvq::coded(sh.key_bits) ? __ldg(h.group_of + row) : 0;
    if (kvq::coded(sh.value_bits))
      r.v_run = sh.group % N == 0 ? __ldg(h.value_scales + size_t(row) * sh.value_runs() + c0 / sh.group)
                                  : uint32_t(row);
    return r;
  }

  __device__ void key(const Layout& L, const Raw& r, float (&k)[N]) {
    const kvq::Shape& sh = h.shape;
    if (r.group == kF16Slot || !kvq::coded(sh.key_bits)) return widen_f16(r.k, L.count, k);
    if (r.group != held_group) hold_group(L, r.group);
    H2O_UNROLL
    for (int i = 0; i < N; ++i)
      k[i] = i < L.count ? read_back(code_of(r.k, i, key_shift, sh.key_bits), key_m[i], key_s[i]) : 0.0f;
  }

  __device__ void value(const Layout& L, const Raw& r, float (&v)[N]) const {
    const kvq::Shape& sh = h.shape;
    if (r.group == kF16Slot || !kvq::coded(sh.value_bits)) return widen_f16(r.v, L.count, v);
    if (sh.group % N == 0) {  // one run holds the chunk
      const kvq::Scale sc = kvq::scale_from_word(r.v_run);
      const float m = half_bits_to_f32(sc.m), s = half_bits_to_f32(sc.s);
      H2O_UNROLL
      for (int i = 0; i < N; ++i)
        v[i] = i < L.count ? read_back(code_of(r.v, i, value_shift, sh.value_bits), m, s) : 0.0f;
      return;
    }
    // Runs shorter than the chunk (G of 1, 2, 4, or not dividing 8): each channel's own number, loaded now.
    const uint32_t* runs = h.value_scales + size_t(r.v_run) * sh.value_runs();
    const int c0 = L.chunk * N;
    H2O_UNROLL
    for (int i = 0; i < N; ++i)
      v[i] = i < L.count ? read_back(code_of(r.v, i, value_shift, sh.value_bits), __ldg(runs + (c0 + i) / sh.group))
                         : 0.0f;
  }

 private:
  // A quantized half's chunk: eight f16 where it keeps 16 bits, else its
  // eight codes: eight bytes of one plane where the row allows, else gathered one by one.
  __device__ uint4 half_row(const Layout& L, const uint8_t* packed, int bits, int row_bytes, int c0) const {
    if (!kvq::coded(bits)) return f16_bits(reinterpret_cast<const uint16_t*>(packed) + c0, L.count, L.vector);
    if (planes_whole) {
      const uint2 b = __ldg(reinterpret_cast<const uint2*>(packed + c0 % row_bytes));
      return make_uint4(b.x, b.y, 0u, 0u);
    }
    uint32_t word[2] = {0u, 0u};
    H2O_UNROLL
    for (int i = 0; i < N; ++i)
      if (i < L.count) word[i / 4] |= kvq::code_at(packed, h.shape.hd, bits, c0 + i) << (8 * (i % 4));
    return make_uint4(word[0], word[1], 0u, 0u);
  }

  // This lane's chunk of key group g's numbers, widened: two 16-byte loads on the vector path.
  __device__ void hold_group(const Layout& L, int g) {
    const uint32_t* at = h.key_scales + size_t(g) * h.shape.hd + L.chunk * N;
    uint32_t words[N];
    if (L.vector) {
      const uint4 a = __ldg(reinterpret_cast<const uint4*>(at)), b = __ldg(reinterpret_cast<const uint4*>(at + 4));
      const uint32_t both[N] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      H2O_UNROLL
      for (int i = 0; i < N; ++i) words[i] = both[i];
    } else {
      H2O_UNROLL
      for (int i = 0; i < N; ++i) words[i] = i < L.count ? __ldg(at + i) : 0u;
    }
    H2O_UNROLL
    for (int i = 0; i < N; ++i) {
      const kvq::Scale sc = kvq::scale_from_word(words[i]);
      key_m[i] = half_bits_to_f32(sc.m);
      key_s[i] = half_bits_to_f32(sc.s);
    }
    held_group = g;
  }
};

template <int Q>
__global__ void __launch_bounds__(kAttentionThreads, attention_min_blocks(Q))
    attention_low_bit_kernel(const float* qkv, const ItemDesc* items, const RowTile* tiles, int layer, ModelDims d,
                             float scale, AttentionScratch s, AttentionOutput out) {
  H2O_SHARED(float, sm_acc, [kAttentionWarps * 32 * kLanes * Q]);
  H2O_SHARED(float, sm_ml, [kAttentionWarps * 32 * Q * 2]);

  // A copy held across the keys (read again after them, the one-query
  // instance spilled 4 bytes; ptxas -v).
  const RowTile tile = tiles[blockIdx.x];
  const ItemDesc& it = items[tile.item];
  const SplitKeys k = split_keys_of(it, tile, s.split_keys);
  if (!k.live) return;  // the whole block: no barrier is skipped by a part of it
  LowBitRows rows;
  rows.h = low_bit_view(it.cache, layer, k.kv_head, d.kv_heads);
  // f16 rows are 16-byte aligned where head_dim is a multiple of 8 (allocations are 256-byte aligned).
  const Layout L = make_layout(d.head_dim, kLanes, d.head_dim % kLanes == 0);
  rows.prepare(L);
  attention_block<LowBitRows, Q>(rows, L, qkv, it, tile, k, d, scale, s, sm_acc, sm_ml);
  combine_if_last(items, tiles, d, s, out);
}

}  // namespace

void attention_low_bit(const float* qkv, const ItemDesc* items, const RowTile* tiles, int tile_count, int tile_queries,
                       int layer, const ModelDims& dims, const AttentionScratch& s, const AttentionOutput& out,
                       gpu::Stream stream) {
  if (tile_count == 0) return;
  check_output(dims, out, "attention_low_bit");
  const float scale = 1.0f / sqrtf(float(dims.head_dim));
  const dim3 grid(unsigned(tile_count), unsigned(dims.kv_heads));
  const dim3 block{unsigned(kAttentionThreads)};
  for_tile_queries(tile_queries, [&](auto q) {
    H2O_LAUNCH(grid, block, stream, attention_low_bit_kernel<decltype(q)::value>)(qkv, items, tiles, layer, dims, scale,
                                                                                  s, out);
  });
  gpu::check_launch("attention_low_bit");
}

}  // namespace H2O_KERN_NS
