#pragma once
// The split-K attention block (flash-decoding) written once for every cache
// layout (attention_partial.cu: keys and values as rows of the storage type;
// attention_low_bit.cu: a quantized cache's f16 and code runs). A layout is a
// `Rows` type that says how a lane loads its chunk of one key's row and reads
// the key and value back as floats:
//
//   struct Rows {
//     static constexpr int N;   // elements of a lane's chunk
//     static constexpr int unroll(int queries);  // keys a lane loads before it uses any
//     struct Raw;               // what one key's loads bring, before any use
//     Raw load(const Layout&, int key) const;
//     void key(const Layout&, const Raw&, float (&k)[N]);  // keys in order; may keep
//                               // what consecutive keys share (a key group's numbers)
//     void value(const Layout&, const Raw&, float (&v)[N]) const;
//   };
//
// A block of kAttentionWarps warps takes one split of up to split_keys keys
// of one KV head of one item (its RowTile is grid x, the KV head grid y), for
// a tile of that item's query rows and every query head of the group (GQA:
// each key is read once for the whole group).
// Lanes split head_dim: a key's row is held by `width` lanes (a power of
// two), each holding one chunk, so a warp reads 32 / width consecutive keys
// as one contiguous stretch. Each lane loads kUnroll keys before it uses any,
// so several loads are in flight (fewer keys where more queries hold
// registers). The q·k dot is each lane's chunk and then a
// butterfly over the key's lanes (__shfl_xor_sync: both lanes of a pair add
// the same two numbers, so every lane gets the same bits). Each group of
// `width` lanes keeps its own online softmax (max, sum and its chunk of the
// output, per query); at the end the block's groups are merged through
// shared memory in a fixed order, and the block writes its unnormalised
// output, max and sum, and every visible key's scaled logit for
// attention_scores; the tile's last split block to finish then combines the
// splits (attention_combine.cuh). Causal within a prefill chunk: row r sees
// slots < n_before + r + 1. Every sum has a fixed order, so results are
// deterministic.
#include <cstdint>
#include <type_traits>

#include "kernels/attention_combine.cuh"
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {

inline constexpr int kAttentionThreads = kAttentionWarps * 32;
// Blocks an SM keeps of the instance of Q queries (__launch_bounds__): the
// registers each instance may take (128, 168, 255 a thread) so that its keys'
// loads and the combine's tail fit without spills (ptxas -v), where ptxas's
// own choice of occupancy left some instances spilling after the combine was
// folded in.
__host__ __device__ constexpr int attention_min_blocks(int queries) { return queries <= 1 ? 4 : queries <= 2 ? 3 : 2; }

// How a block's lanes share a row of `hd` elements in chunks of n.
struct Layout {
  int hd = 0;
  int width = 1;     // lanes per key: a power of two >= the row's chunks
  int per_warp = 32; // keys a warp takes at once
  int sub = 0;       // this lane's key among them
  int chunk = 0;     // this lane's chunk of the row
  int count = 0;     // elements of the row in that chunk (0: past the row)
  bool vector = false;  // whole 16-byte loads (the Rows type decides)
};

__device__ __forceinline__ Layout make_layout(int hd, int n, bool vector) {
  Layout L;
  L.hd = hd;
  while (L.width * n < hd) L.width *= 2;
  L.per_warp = 32 / L.width;
  const int lane = int(threadIdx.x) & 31;
  L.sub = lane / L.width;
  L.chunk = lane % L.width;
  L.count = imax(0, imin(n, hd - L.chunk * n));
  L.vector = vector;
  return L;
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

// Folds the scores s[u][q] of U keys into the running softmax, each key's
// value read back (Rows::value) one key at a time, to spare registers. Each
// output element sums acc * rescale, then the keys in order.
template <class Rows, int Q, int U>
__device__ __forceinline__ void fold(const Rows& rows, const Layout& L, Running<Q, Rows::N>& st, float (&s)[U][Q],
                                     const typename Rows::Raw (&raw)[U]) {
  constexpr int N = Rows::N;
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
    for (int i = 0; i < N; ++i) st.acc[qi][i] *= r;
    st.m[qi] = mx;
    st.l[qi] = l;
  }
  H2O_UNROLL
  for (int u = 0; u < U; ++u) {
    float v[N];
    rows.value(L, raw[u], v);
    H2O_UNROLL
    for (int qi = 0; qi < Q; ++qi) {
      H2O_UNROLL
      for (int i = 0; i < N; ++i) st.acc[qi][i] += s[u][qi] * v[i];
    }
  }
}

// Keys [first, key_end) of this lane group, kUnroll at a time, a block's
// groups interleaved so that each warp pass reads consecutive keys.
template <class Rows, int Q>
__device__ __forceinline__ void attend(Rows& rows, const Layout& L, int first, int key_end, float scale,
                                       const Queries<Q, Rows::N>& qs, float* logits, int key_stride,
                                       Running<Q, Rows::N>& st) {
  constexpr int N = Rows::N, U = Rows::unroll(Q);
  const int step = kAttentionWarps * L.per_warp * U;
  for (int k0 = first; k0 < key_end; k0 += step) {
    typename Rows::Raw raw[U];
    H2O_UNROLL
    for (int u = 0; u < U; ++u) {  // every load before any use
      const int key = k0 + u * L.per_warp + L.sub;
      raw[u] = rows.load(L, key < key_end && L.count > 0 ? key : -1);
    }
    float s[U][Q];
    H2O_UNROLL
    for (int u = 0; u < U; ++u) {
      const int key = k0 + u * L.per_warp + L.sub;
      float k[N];
      rows.key(L, raw[u], k);
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
    fold(rows, L, st, s, raw);
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
  for (int e = int(threadIdx.x); e < queries * width; e += kAttentionThreads) {
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

// Where a block's split lies: keys [begin, end) of KV head `kv_head` of the
// tile's item; `live` false when the tile's last row sees none of them (a
// split its item's bucket may need, not yet reached).
struct SplitKeys {
  int kv_head = 0, begin = 0, end = 0;
  bool live = false;
};
__device__ __forceinline__ SplitKeys split_keys_of(const ItemDesc& it, const RowTile& tile, int split_keys) {
  SplitKeys k;
  k.kv_head = int(blockIdx.y);
  k.begin = tile.split * split_keys;
  const int visible_end = it.n_before + tile.row_begin + tile.row_count;  // what the tile's last row sees
  k.live = k.begin < visible_end;  // the first splits_seen(visible_end) (attention_combine.cuh counts them)
  k.end = imin(k.begin + split_keys, visible_end);
  return k;
}

// The block's work once its Rows are known: the queries into registers, its
// lane group's keys, the merge (then the kernel's combine_if_last).
// `rows` reads the keys of (layer, k.kv_head).
template <class Rows, int Q>
__device__ __forceinline__ void attention_block(Rows& rows, const Layout& L, const float* qkv, const ItemDesc& it,
                                                const RowTile& tile, const SplitKeys& k, const ModelDims& d,
                                                float scale, const AttentionScratch& s, SharedPtr<float> sm_acc,
                                                SharedPtr<float> sm_ml) {
  constexpr int N = Rows::N;
  const int queries = tile.row_count * d.group;
  const QueryMap map{it.first_row + tile.row_begin, k.kv_head * d.group, d.group, d.heads};
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
  attend<Rows, Q>(rows, L, k.begin + warp * L.per_warp * Rows::unroll(Q), k.end, scale, qs, s.logits, s.key_stride,
                  st);
  // partials[row_head][split_bucket][head_dim + 2], this split's slice.
  merge(L, st, queries, map, s.partials + size_t(tile.split) * (d.head_dim + 2), s.split_bucket * (d.head_dim + 2),
        sm_acc, sm_ml);
}

// Calls launch(std::integral_constant<int, Q>{}) for the kernel instance of
// Q queries a block: the least of 1, 2, 4 and 8 that holds tile_queries.
template <class Launch>
void for_tile_queries(int tile_queries, Launch launch) {
  if (tile_queries <= 1)
    launch(std::integral_constant<int, 1>{});
  else if (tile_queries <= 2)
    launch(std::integral_constant<int, 2>{});
  else if (tile_queries <= 4)
    launch(std::integral_constant<int, 4>{});
  else
    launch(std::integral_constant<int, 8>{});
}

}  // namespace H2O_KERN_NS
