// Split-K attention (flash-decoding): a block takes one split of up to
// kSplitKeys keys of one KV head of one item, for a tile of that item's query
// rows and every query head of the group (GQA: each key is read once for the
// group). Keys and values are staged in shared memory kKeysPerStep at a time,
// with an online softmax per query; the block writes its unnormalised output,
// running max and sum for attention_combine, and every visible key's scaled
// logit for attention_scores, which adds the normalised probabilities into
// the scores. Causal within a prefill chunk: row r sees slots < n_before + r + 1.
//
// Each dot product and sum runs in one thread in a fixed order, so results do
// not depend on the block size or the grid.
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace h2o::kern {
namespace {

template <class T>
__global__ void attention_partial_kernel(const float* qkv, const ItemDesc* items, const RowTile* tiles, int layer,
                                         ModelDims d, float scale, float* logits, int key_stride, float* partials,
                                         int split_bucket) {
  __shared__ float qs[kMaxTileQueries][kMaxHeadDim + 1];  // +1: threads reading different rows hit different banks
  __shared__ float ks[kKeysPerStep][kMaxHeadDim + 1];
  __shared__ float vs[kKeysPerStep][kMaxHeadDim];
  __shared__ float ps[kMaxTileQueries][kKeysPerStep];
  __shared__ float os[kMaxTileQueries][kMaxHeadDim];
  __shared__ float run_max[kMaxTileQueries], run_sum[kMaxTileQueries], rescale[kMaxTileQueries];

  const RowTile tile = tiles[blockIdx.z];
  const ItemDesc& it = items[tile.item];
  const int g = int(blockIdx.y), split = int(blockIdx.x);
  const int hd = d.head_dim, group = d.group;
  const int key_begin = split * kSplitKeys;
  const int visible_end = it.n_before + tile.row_begin + tile.row_count;  // what the tile's last row sees
  if (key_begin >= visible_end) return;  // the whole block: no barrier is skipped by a part of it
  const int key_end = imin(key_begin + kSplitKeys, visible_end);
  const int queries = tile.row_count * group;  // query q: row tile.row_begin + q / group, head g * group + q % group
  const int tid = int(threadIdx.x), threads = int(blockDim.x);

  for (int e = tid; e < queries * hd; e += threads) {
    const int q = e / hd, c = e % hd;
    const int row = it.first_row + tile.row_begin + q / group;
    qs[q][c] = qkv[size_t(row) * d.qkv_stride + size_t(g * group + q % group) * hd + c];
    os[q][c] = 0.0f;
  }
  for (int q = tid; q < queries; q += threads) {
    run_max[q] = -INFINITY;
    run_sum[q] = 0.0f;
  }
  const size_t head_base = (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap) * hd;
  const T* keys = static_cast<const T*>(it.cache.k) + head_base;
  const T* values = static_cast<const T*>(it.cache.v) + head_base;

  for (int k0 = key_begin; k0 < key_end; k0 += kKeysPerStep) {
    const int kn = imin(kKeysPerStep, key_end - k0);
    __syncthreads();  // the previous keys have been used; the queries are staged
    for (int e = tid; e < kn * hd; e += threads) {
      const int j = e / hd, c = e % hd;
      ks[j][c] = to_f32(keys[size_t(k0 + j) * hd + c]);
      vs[j][c] = to_f32(values[size_t(k0 + j) * hd + c]);
    }
    __syncthreads();
    for (int e = tid; e < queries * kn; e += threads) {
      const int q = e / kn, j = e % kn, slot = k0 + j;
      const int r = tile.row_begin + q / group;
      float s = -INFINITY;
      if (slot < it.n_before + r + 1) {
        float dot = 0.0f;
        for (int c = 0; c < hd; ++c) dot += qs[q][c] * ks[j][c];
        s = dot * scale;
        const size_t row = size_t(it.first_row + r);
        logits[(row * d.heads + size_t(g * group + q % group)) * size_t(key_stride) + size_t(slot)] = s;
      }
      ps[q][j] = s;
    }
    __syncthreads();
    for (int q = tid; q < queries; q += threads) {
      float m = run_max[q];
      for (int j = 0; j < kn; ++j) m = fmaxf(m, ps[q][j]);
      const float r = m == -INFINITY ? 1.0f : expf(run_max[q] - m);
      float sum = run_sum[q] * r;
      for (int j = 0; j < kn; ++j) {
        const float e = ps[q][j] == -INFINITY ? 0.0f : expf(ps[q][j] - m);
        ps[q][j] = e;
        sum += e;
      }
      run_max[q] = m;
      run_sum[q] = sum;
      rescale[q] = r;
    }
    __syncthreads();
    for (int e = tid; e < queries * hd; e += threads) {
      const int q = e / hd, c = e % hd;
      float acc = os[q][c] * rescale[q];
      for (int j = 0; j < kn; ++j) acc += ps[q][j] * vs[j][c];
      os[q][c] = acc;
    }
  }
  __syncthreads();
  const int width = hd + 2;
  for (int e = tid; e < queries * width; e += threads) {
    const int q = e / width, c = e % width;
    const size_t row = size_t(it.first_row + tile.row_begin + q / group);
    const size_t head = size_t(g * group + q % group);
    float* out = partials + ((row * d.heads + head) * size_t(split_bucket) + size_t(split)) * width;
    out[c] = c < hd ? os[q][c] : c == hd ? run_max[q] : run_sum[q];
  }
}

}  // namespace

void attention_partial(DType dtype, const float* qkv, const ItemDesc* items, const RowTile* tiles, int tile_count,
                       int layer, const ModelDims& dims, const AttentionScratch& s, int threads, gpu::Stream stream) {
  const float scale = 1.0f / sqrtf(float(dims.head_dim));
  const dim3 grid(unsigned(s.split_bucket), unsigned(dims.kv_heads), unsigned(tile_count));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(grid, dim3(unsigned(threads)), stream, attention_partial_kernel<T>)(
                       qkv, items, tiles, layer, dims, scale, s.logits, s.key_stride, s.partials, s.split_bucket));
  gpu::check_launch("attention_partial");
}

}  // namespace h2o::kern
