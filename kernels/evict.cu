// The cut, on the device, driven by the EvictionRule alone: a block per
// (layer, KV head) of each item whose cache is due. It keeps the sinks (the
// leading slots whose stream position is below `sinks`), the last `recent`
// slots and the `by_score` highest-scored slots between them (ties to the
// more recent slot: survival_key), writes the evicted positions in slot
// order, and compacts keys, values, pre-RoPE keys, positions and scores
// stably to the front. Under rolling positions a moved key is rotated afresh
// from its pre-RoPE copy to its new slot, with the cos/sin of that slot from
// the backend's table (rope_slots.cu), as the CPU cache rotates it.
//
// Compaction starts at the first evicted slot (the rows before it stay) and
// is in place, in chunks of destinations in increasing order: each thread
// holds a few 16-byte pieces of its chunk's source rows in registers, every
// load of a chunk happens before any of its stores (a barrier between), and
// every destination of a chunk lies below the sources of the chunks after it
// (a survivor only moves towards the front), so no row is overwritten before
// it has been read, with one barrier a chunk.
#include "core/policy/cut_shape.h"
#include "kernels/block_reduce.cuh"
#include "kernels/launch.h"
#include "kernels/low_bit_rows.cuh"
#include "kernels/move_rows.cuh"
#include "kernels/rope.cuh"
#include "kernels/vec.cuh"

namespace H2O_KERN_NS {
namespace {

// One (layer, KV head) of one cache, as the cut sees it.
template <class T>
struct HeadRows {
  T *keys, *values, *raw;  // raw: pre-RoPE keys, rolling positions only (else null)
  int32_t* pos;
  float* score;
};

// Which slots stay: each slot's destination into src_of (src_of[dst] = slot),
// the evicted positions in slot order into `out`; returns the first evicted
// slot (n where none leaves). Sets *kept_total to the slots that stay and
// *sink_slots to the sinks among them.
template <class T>
__device__ int select_survivors(const ItemDesc& it, const HeadRows<T>& h, int n, int* src_of, int order_stride,
                                int32_t* out, int evicted_here, int* kept_total, int* sink_slots) {
  H2O_SHARED(int, counts, [1025]);
  H2O_SHARED(int, partials, [32]);
  const int tid = int(threadIdx.x), threads = int(blockDim.x);

  // Sinks: positions ascend with slots, so they are the slots below the rule's position.
  int below = 0;
  for (int j = tid; j < n; j += threads) below += h.pos[j] < it.sinks ? 1 : 0;
  const int sinks = block_reduce(below, Sum{}, 0, partials);
  const CutShape cut = cut_shape(n, sinks, it.recent, it.by_score);
  *sink_slots = cut.sinks;

  // The by_score-th largest survival key of the middle slots: the threshold to stay.
  unsigned long long threshold = ~0ull;
  if (cut.by_score > 0)
    threshold = block_kth_largest(cut.sinks, cut.recent_begin, cut.by_score,
                                  [&](int j) -> unsigned long long { return survival_key(h.score[j], j); });
  const auto stays = [&](int j) {
    return j < cut.sinks || j >= cut.recent_begin || (cut.by_score > 0 && survival_key(h.score[j], j) >= threshold);
  };

  // Each thread takes a contiguous range of slots: its kept count, then the
  // prefix over the threads gives every slot its destination (or, evicted,
  // its place in the evicted list).
  const int per = (n + threads - 1) / threads;
  const int begin = imin(n, tid * per), end = imin(n, begin + per);
  int mine = 0;
  for (int j = begin; j < end; ++j) mine += stays(j) ? 1 : 0;
  int dst = block_exclusive_scan(mine, counts, kept_total);
  int first_gone = n;
  for (int j = begin; j < end; ++j) {
    if (stays(j)) {
      if (dst < order_stride) src_of[dst] = j;
      ++dst;
    } else {
      first_gone = imin(first_gone, j);
      const int e = j - dst;  // slots before j that left
      if (e < evicted_here) out[e] = h.pos[j];
    }
  }
  return block_reduce(first_gone, Min{}, n, partials);  // its barriers also publish src_of
}

// Moves the survivors at destinations [first, total) to the front. A piece is
// 16 bytes where a row is a whole number of them, else one RoPE pair; `rope`
// (rolling only) holds cos, sin for every (slot, pair).
template <class T, class Piece>
__device__ void compact(const HeadRows<T>& h, const int* src_of, int first, int total, int hd, const float* rope) {
  constexpr int kPer = Piece::kCount;  // elements of a piece: whole RoPE pairs
  constexpr int kHeld = kMovePiecesPerThread;
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const int pieces = hd / kPer;  // per row
  Piece* const k_in = reinterpret_cast<Piece*>(h.raw ? h.raw : h.keys);  // what a moved key is made from
  Piece* const keys = reinterpret_cast<Piece*>(h.keys);
  Piece* const values = reinterpret_cast<Piece*>(h.values);
  // The four arrays of a chunk staged together: one barrier a chunk for all of them.
  Piece k[kHeld], v[kHeld];
  int32_t p[kHeld];
  float s[kHeld];
  const auto load = [&](int d0, int rows) {
    H2O_UNROLL
    for (int i = 0; i < kHeld; ++i) {
      const int e = tid + i * threads;
      if (e < rows * pieces) {
        const size_t from = size_t(src_of[d0 + e / pieces]) * pieces + size_t(e % pieces);
        k[i] = k_in[from];
        v[i] = values[from];
      }
      if (e < rows) p[i] = h.pos[src_of[d0 + e]], s[i] = h.score[src_of[d0 + e]];
    }
  };
  const auto store = [&](int d0, int rows) {
    H2O_UNROLL
    for (int i = 0; i < kHeld; ++i) {
      const int e = tid + i * threads;
      if (e < rows * pieces) {
        const int to = d0 + e / pieces, piece = e % pieces;
        const size_t at = size_t(to) * pieces + size_t(piece);
        values[at] = v[i];
        if (!h.raw) {
          keys[at] = k[i];
        } else {
          k_in[at] = k[i];
          keys[at] = rotated(k[i], rope + (size_t(to) * (hd / 2) + size_t(piece) * (kPer / 2)) * 2);
        }
      }
      if (e < rows) h.pos[d0 + e] = p[i], h.score[d0 + e] = s[i];
    }
  };
  move_in_chunks(first, total, imax(1, threads * kHeld / pieces), load, store);
}

// The key groups of `rows` quantized rows renumbered in order after a cut,
// emptied groups gone: each thread a contiguous range of rows; a row starts a
// group where its old number differs from the row before it. Writes each new
// group's old number to group_src; returns how many groups are left.
__device__ int renumber_groups(int32_t* group_of, int rows, int* group_src, SharedPtr<int> prefix) {
  const int threads = int(blockDim.x), per = (rows + threads - 1) / threads;
  const int begin = imin(rows, int(threadIdx.x) * per), end = imin(rows, begin + per);
  int before = begin > 0 ? group_of[begin - 1] : -1;
  int starts = 0;
  for (int r = begin, last = before; r < end; last = group_of[r], ++r) starts += group_of[r] != last ? 1 : 0;
  int groups = 0;
  int id = block_exclusive_scan(starts, prefix, &groups) - 1;  // its barriers order the reads above before the writes
  for (int r = begin; r < end; ++r) {
    const int old = group_of[r];
    if (old != before) group_src[++id] = old;
    group_of[r] = id;
    before = old;
  }
  return groups;
}

// A quantized cache's cut after select_survivors (SEMANTICS.md, "KV
// precision"): positions and scores move by slot as for any cache; the sinks
// never move (a cut keeps them all); the quantized survivors' codes, value
// numbers and group numbers move down their run, the residual's f16 rows down
// theirs; key groups left empty go and the others are renumbered in order,
// their numbers moved with them, never re-quantized. Then the head's counts.
__device__ void compact_low_bit(LowBitView h, int32_t* pos, float* score, int* src_of, int first, int total) {
  H2O_SHARED(int, partials, [32]);
  H2O_SHARED(int, prefix, [1025]);
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const kvq::Shape& sh = h.shape;
  const kvq::Runs was = h.runs;
  int mine = 0;
  for (int d = tid; d < total; d += threads) mine += was.quantized_slot(src_of[d]) ? 1 : 0;
  kvq::Runs now;
  now.sinks = was.sinks;
  now.quantized = block_reduce(mine, Sum{}, 0, partials);
  now.residual = total - was.sinks - now.quantized;
  const auto same = [](int d) { return d; };
  const auto from = [&](int d) { return src_of[d]; };
  move_rows(pos, 4, first, total, same, from);
  move_rows(score, 4, first, total, same, from);
  // The residual's f16 rows: its i-th survivor to f16 row sinks + i, from its slot's f16 row.
  const int r_begin = now.sinks + now.quantized;
  const auto res_dst = [&](int i) { return now.sinks + i; };
  const auto res_src = [&](int i) { return was.full_row(src_of[r_begin + i]); };
  move_rows(h.full_k, int(sh.f16_row_bytes()), 0, now.residual, res_dst, res_src);
  move_rows(h.full_v, int(sh.f16_row_bytes()), 0, now.residual, res_dst, res_src);
  // The quantized survivors: row d from row src - sinks (rows before the first eviction stay).
  const int q_first = imax(0, imin(first, r_begin) - was.sinks);
  const auto q_dst = [](int d) { return d; };
  const auto q_src = [&](int d) { return src_of[was.sinks + d] - was.sinks; };
  move_rows(h.quant_k, sh.key_row_bytes(), q_first, now.quantized, q_dst, q_src);
  move_rows(h.quant_v, sh.value_row_bytes(), q_first, now.quantized, q_dst, q_src);
  if (kvq::coded(sh.value_bits))
    move_rows(h.value_scales, int(sh.value_scale_bytes()), q_first, now.quantized, q_dst, q_src);
  move_rows(h.group_of, 4, q_first, now.quantized, q_dst, q_src);
  now.groups = renumber_groups(h.group_of, now.quantized, src_of, prefix);
  __syncthreads();
  if (kvq::coded(sh.key_bits))
    move_rows(h.key_scales, int(sh.key_group_bytes()), 0, now.groups, [](int g) { return g; },
              [&](int g) { return src_of[g]; });
  __syncthreads();  // every thread has read the counts it started from
  if (tid == 0) store_runs(now, h.counts);
}

template <class T>
__global__ void evict_kernel(const ItemDesc* items, ModelDims d, int32_t* evicted, int* order, int order_stride,
                             const float* rope) {
  const ItemDesc& it = items[blockIdx.y];
  if (!it.cut) return;  // the grid covers every item, so one graph serves any set of cuts
  const int layer = int(blockIdx.x) / d.kv_heads, g = int(blockIdx.x) % d.kv_heads;
  const int n = it.n_before + it.rows, hd = d.head_dim;
  const bool low_bit = it.cache.low.used();
  const size_t head = (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap);
  HeadRows<T> h{};
  if (!low_bit) {
    h.keys = static_cast<T*>(it.cache.k) + head * hd;
    h.values = static_cast<T*>(it.cache.v) + head * hd;
    h.raw = it.rolling ? static_cast<T*>(it.cache.k_raw) + head * hd : nullptr;
  }
  h.pos = it.cache.pos + head;
  h.score = it.cache.score + head;
  int* src_of = order + size_t(blockIdx.y * gridDim.x + blockIdx.x) * size_t(order_stride);
  const int evicted_here = n - it.kept;
  int32_t* out = evicted + it.evicted_base + size_t(blockIdx.x) * size_t(evicted_here);

  int total = 0, sinks = 0;
  const int first = select_survivors(it, h, n, src_of, order_stride, out, evicted_here, &total, &sinks);
  if (total != it.kept) {
    // The host counted otherwise: a bug, not a device state. Leave the cache
    // as it is and mark the evicted list, which the host checks.
    if (threadIdx.x == 0)
      for (int e = 0; e < evicted_here; ++e) out[e] = -1;
    return;
  }
  if (low_bit) {
    LowBitView lb = low_bit_view(it.cache, layer, g, d.kv_heads);
    lb.runs.sinks = sinks;  // this step's rows may have brought the first ones
    compact_low_bit(lb, h.pos, h.score, src_of, first, total);
    return;
  }
  // 16-byte pieces where every row is a whole number of them (the cache's rows are
  // then 16-byte aligned too), else one RoPE pair at a time.
  if ((hd * int(sizeof(T))) % 16 == 0)
    compact<T, Vec<T, 16 / sizeof(T)>>(h, src_of, first, total, hd, rope);
  else
    compact<T, Vec<T, 2>>(h, src_of, first, total, hd, rope);
}

}  // namespace

void evict(DType dtype, const ItemDesc* items, int item_count, const ModelDims& dims, int32_t* evicted, int* order,
           int order_stride, const float* rope_slots, int threads, gpu::Stream stream) {
  if (item_count == 0) return;
  const dim3 grid(unsigned(dims.layers * dims.kv_heads), unsigned(item_count));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(grid, dim3(unsigned(H2O_FIT_BLOCK(threads, evict_kernel<T>))), stream,
                              evict_kernel<T>)(items, dims, evicted, order, order_stride, rope_slots));
  gpu::check_launch("evict");
}

}  // namespace H2O_KERN_NS
