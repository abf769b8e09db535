// Split-K attention (flash-decoding), laid out as the fast decoders lay it
// out (llama.cpp's fattn-vec, FlashInfer's decode kernel): a block of
// kAttentionWarps warps takes one split of up to split_keys keys of one KV
// head of one item, for a tile of that item's query rows and every query head
// of the group (GQA: each key is read once for the whole group).
//
// Lanes split head_dim: a key's row is held by `width` lanes (a power of two),
// each holding one 16-byte chunk (eight halves or four floats) loaded
// straight from global memory into registers, so a warp reads 32 / width
// consecutive keys as one contiguous stretch. Each lane loads kUnroll keys'
// K and V chunks before it uses any, so several loads are in flight. The q·k
// dot is each lane's chunk and then a butterfly over the key's lanes
// (__shfl_xor_sync: both lanes of a pair add the same two numbers, so every
// lane gets the same bits). Each group of `width` lanes keeps its own online
// softmax (max, sum and its chunk of the output, per query); at the end the
// block's groups are merged through shared memory in a fixed order, and the
// block writes its unnormalised output, max and sum for attention_combine,
// and every visible key's scaled logit for attention_scores. Causal within a
// prefill chunk: row r sees slots < n_before + r + 1.
//
// A head_dim that is not a multiple of the chunk (or a cache that is not
// 16-byte aligned) takes the same path with each chunk read element by
// element. The block size is the kernel's own and every sum has a fixed
// order, so results are deterministic and do not depend on the tuning.
#include <cstdint>
#include <cstring>

#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

constexpr int kThreads = kAttentionWarps * 32;

// Elements of a K or V row in one lane's 16-byte chunk.
template <class T>
constexpr int kChunk = 16 / int(sizeof(T));

// Keys a lane loads before it uses any: fewer where more queries hold registers.
template <int Q>
constexpr int kUnroll = Q <= 2 ? 4 : Q == 4 ? 2 : 1;

// How a block's lanes share a row.
struct Layout {
  int hd = 0;
  int width = 1;     // lanes per key: a power of two >= the row's chunks
  int per_warp = 32; // keys a warp takes at once
  int sub = 0;       // this lane's key among them
  int chunk = 0;     // this lane's chunk of the row
  int count = 0;     // elements of the row in that chunk (0: past the row)
  bool vector = false;  // whole 16-byte loads
};

template <class T>
__device__ __forceinline__ Layout make_layout(int hd, const T* keys, const T* values) {
  constexpr int n = kChunk<T>;
  Layout L;
  L.hd = hd;
  while (L.width * n < hd) L.width *= 2;
  L.per_warp = 32 / L.width;
  const int lane = int(threadIdx.x) & 31;
  L.sub = lane / L.width;
  L.chunk = lane % L.width;
  L.count = imax(0, imin(n, hd - L.chunk * n));
  const uintptr_t bases = reinterpret_cast<uintptr_t>(keys) | reinterpret_cast<uintptr_t>(values);
  L.vector = hd % n == 0 && bases % 16 == 0;
  return L;
}

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

// The sum over a key's lanes: each xor pair adds the same two numbers, so
// every lane ends with the same bits.
__device__ __forceinline__ float lanes_sum(float v, int width) {
  for (int offset = width >> 1; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One lane group's online softmax: per query its max, sum and output chunk.
template <int Q, int N>
struct Running {
  float m[Q], l[Q], acc[Q][N];
};

// Query q of a block: batch row row0 + q / group, head head0 + q % group;
// its row of the logit and partial scratch is that row x heads + head.
struct QueryMap {
  int row0 = 0, head0 = 0, group = 1, heads = 0;
  __device__ int row_head(int q) const { return (row0 + q / group) * heads + head0 + q % group; }
};

// The block's queries, as this lane holds them.
template <int Q, int N>
struct Queries {
  float q[Q][N];   // this lane's chunk of each query (zeros past the row and for absent queries)
  int limit[Q];    // slots the query sees (0 for absent ones)
  int row_head[Q]; // QueryMap::row_head
};

// Folds the scores s[u][q] of kUnroll keys and their value chunks (as
// loaded: widened here, one key at a time, to spare registers) into the
// running softmax. Each output element sums acc * rescale, then the keys in order.
template <class T, int Q, int U>
__device__ __forceinline__ void fold(Running<Q, kChunk<T>>& st, float (&s)[U][Q], const uint4 (&vr)[U]) {
  H2O_UNROLL
  for (int qi = 0; qi < Q; ++qi) {
    float mx = st.m[qi];
    H2O_UNROLL
    for (int u = 0; u < U; ++u) mx = fmaxf(mx, s[u][qi]);
    const bool none = mx == -INFINITY;  // nothing seen yet: no weight, nothing rescaled
    const float r = none ? 1.0f : expf(st.m[qi] - mx);
    float l = st.l[qi] * r;
    H2O_UNROLL
    for (int u = 0; u < U; ++u) l += s[u][qi] = none ? 0.0f : expf(s[u][qi] - mx);  // s becomes the weight
    H2O_UNROLL
    for (int i = 0; i < kChunk<T>; ++i) st.acc[qi][i] *= r;
    st.m[qi] = mx;
    st.l[qi] = l;
  }
  H2O_UNROLL
  for (int u = 0; u < U; ++u) {
    float v[kChunk<T>];
    widen<T>(vr[u], v);
    H2O_UNROLL
    for (int qi = 0; qi < Q; ++qi) {
      H2O_UNROLL
      for (int i = 0; i < kChunk<T>; ++i) st.acc[qi][i] += s[u][qi] * v[i];
    }
  }
}

// Keys [first, key_end) of this lane group, kUnroll at a time, a block's
// groups interleaved so that each warp pass reads consecutive keys.
template <class T, int Q>
__device__ __forceinline__ void attend(const Layout& L, const T* keys, const T* values, int first, int key_end,
                                       float scale, const Queries<Q, kChunk<T>>& qs, float* logits, int key_stride,
                                       Running<Q, kChunk<T>>& st) {
  constexpr int N = kChunk<T>, U = kUnroll<Q>;
  const int step = kAttentionWarps * L.per_warp * U;
  for (int k0 = first; k0 < key_end; k0 += step) {
    uint4 kr[U], vr[U];
    H2O_UNROLL
    for (int u = 0; u < U; ++u) {  // every load before any use
      const int key = k0 + u * L.per_warp + L.sub;
      const bool in = key < key_end && L.count > 0;
      const size_t at = size_t(key) * size_t(L.hd) + size_t(L.chunk) * N;
      kr[u] = in ? load_chunk(keys + at, L.count, L.vector) : make_uint4(0u, 0u, 0u, 0u);
      vr[u] = in ? load_chunk(values + at, L.count, L.vector) : make_uint4(0u, 0u, 0u, 0u);
    }
    float s[U][Q];
    H2O_UNROLL
    for (int u = 0; u < U; ++u) {
      const int key = k0 + u * L.per_warp + L.sub;
      float k[N];
      widen<T>(kr[u], k);
      H2O_UNROLL
      for (int qi = 0; qi < Q; ++qi) {
        float dot = 0.0f;
        H2O_UNROLL
        for (int i = 0; i < N; ++i) dot += qs.q[qi][i] * k[i];
        const float x = lanes_sum(dot, L.width) * scale;
        const bool seen = key < key_end && key < qs.limit[qi];
        if (seen && L.chunk == qi % L.width)  // one lane of the key writes it
          logits[size_t(qs.row_head[qi]) * size_t(key_stride) + size_t(key)] = x;
        s[u][qi] = seen ? x : -INFINITY;
      }
    }
    fold<T>(st, s, vr);
  }
}

// Every lane group's state to shared memory, then each (query, element) of
// the block's result merged over the groups in their order, and written out.
template <int Q, int N>
__device__ __forceinline__ void merge(const Layout& L, const Running<Q, N>& st, int queries, const QueryMap& map,
                                      float* partials, int split_stride, SharedPtr<float> sm_acc,
                                      SharedPtr<float> sm_ml) {
  const int groups = kAttentionWarps * L.per_warp;
  const int mine = (int(threadIdx.x) >> 5) * L.per_warp + L.sub;
  H2O_UNROLL
  for (int qi = 0; qi < Q; ++qi) {
    H2O_UNROLL
    for (int i = 0; i < N; ++i)
      if (i < L.count) sm_acc[(mine * Q + qi) * L.hd + L.chunk * N + i] = st.acc[qi][i];
    if (L.chunk == 0) {
      sm_ml[(mine * Q + qi) * 2] = st.m[qi];
      sm_ml[(mine * Q + qi) * 2 + 1] = st.l[qi];
    }
  }
  __syncthreads();
  const int width = L.hd + 2;
  for (int e = int(threadIdx.x); e < queries * width; e += kThreads) {
    const int qi = e / width, c = e % width;
    float m = -INFINITY;
    for (int t = 0; t < groups; ++t) m = fmaxf(m, sm_ml[(t * Q + qi) * 2]);
    float sum = 0.0f;
    for (int t = 0; t < groups; ++t) {
      const float mt = sm_ml[(t * Q + qi) * 2];
      const float f = mt == -INFINITY ? 0.0f : expf(mt - m);
      sum += f * (c < L.hd ? sm_acc[(t * Q + qi) * L.hd + c] : sm_ml[(t * Q + qi) * 2 + 1]);
    }
    partials[size_t(map.row_head(qi)) * size_t(split_stride) + size_t(c)] = c == L.hd ? m : sum;
  }
}

template <class T, int Q>
__global__ void __launch_bounds__(kThreads)
    attention_partial_kernel(const float* qkv, const ItemDesc* items, const RowTile* tiles, int layer, ModelDims d,
                             float scale, AttentionScratch s) {
  constexpr int N = kChunk<T>;
  // Bounds: groups x head_dim <= 32 lanes x N per warp.
  H2O_SHARED(float, sm_acc, [kAttentionWarps * 32 * N * Q]);
  H2O_SHARED(float, sm_ml, [kAttentionWarps * 32 * Q * 2]);

  const RowTile tile = tiles[blockIdx.z];
  const ItemDesc& it = items[tile.item];
  const int g = int(blockIdx.y), split = int(blockIdx.x);
  const int key_begin = split * s.split_keys;
  const int visible_end = it.n_before + tile.row_begin + tile.row_count;  // what the tile's last row sees
  if (key_begin >= visible_end) return;  // the whole block: no barrier is skipped by a part of it
  const int key_end = imin(key_begin + s.split_keys, visible_end);
  const int queries = tile.row_count * d.group;
  const size_t head_base = (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap) * d.head_dim;
  const T* keys = static_cast<const T*>(it.cache.k) + head_base;
  const T* values = static_cast<const T*>(it.cache.v) + head_base;
  const Layout L = make_layout<T>(d.head_dim, keys, values);

  const QueryMap map{it.first_row + tile.row_begin, g * d.group, d.group, d.heads};
  Queries<Q, N> qs;
  Running<Q, N> st;
  H2O_UNROLL
  for (int qi = 0; qi < Q; ++qi) {
    const bool present = qi < queries;
    const int rh = map.row_head(qi);
    qs.limit[qi] = present ? it.n_before + tile.row_begin + qi / d.group + 1 : 0;
    qs.row_head[qi] = rh;
    const float* query = qkv + size_t(rh / d.heads) * d.qkv_stride + size_t(rh % d.heads) * d.head_dim;
    H2O_UNROLL
    for (int i = 0; i < N; ++i) qs.q[qi][i] = present && i < L.count ? query[L.chunk * N + i] : 0.0f;
    st.m[qi] = -INFINITY;
    st.l[qi] = 0.0f;
    H2O_UNROLL
    for (int i = 0; i < N; ++i) st.acc[qi][i] = 0.0f;
  }
  const int warp = int(threadIdx.x) >> 5;
  attend<T, Q>(L, keys, values, key_begin + warp * L.per_warp * kUnroll<Q>, key_end, scale, qs, s.logits,
               s.key_stride, st);
  // partials[row_head][split_bucket][head_dim + 2], this split's slice.
  merge(L, st, queries, map, s.partials + size_t(split) * (d.head_dim + 2), s.split_bucket * (d.head_dim + 2), sm_acc,
        sm_ml);
}

template <class T>
void launch(int tile_queries, dim3 grid, gpu::Stream stream, const float* qkv, const ItemDesc* items,
            const RowTile* tiles, int layer, const ModelDims& d, float scale, const AttentionScratch& s) {
  const dim3 block{unsigned(kThreads)};
  if (tile_queries <= 1)
    H2O_LAUNCH(grid, block, stream, attention_partial_kernel<T, 1>)(qkv, items, tiles, layer, d, scale, s);
  else if (tile_queries <= 2)
    H2O_LAUNCH(grid, block, stream, attention_partial_kernel<T, 2>)(qkv, items, tiles, layer, d, scale, s);
  else if (tile_queries <= 4)
    H2O_LAUNCH(grid, block, stream, attention_partial_kernel<T, 4>)(qkv, items, tiles, layer, d, scale, s);
  else
    H2O_LAUNCH(grid, block, stream, attention_partial_kernel<T, 8>)(qkv, items, tiles, layer, d, scale, s);
}

}  // namespace

void attention_partial(DType dtype, const float* qkv, const ItemDesc* items, const RowTile* tiles, int tile_count,
                       int tile_queries, int layer, const ModelDims& dims, const AttentionScratch& s,
                       gpu::Stream stream) {
  const float scale = 1.0f / sqrtf(float(dims.head_dim));
  const dim3 grid(unsigned(s.split_bucket), unsigned(dims.kv_heads), unsigned(tile_count));
  H2O_WITH_STORAGE(dtype, T, launch<T>(tile_queries, grid, stream, qkv, items, tiles, layer, dims, scale, s));
  gpu::check_launch("attention_partial");
}

}  // namespace H2O_KERN_NS
