// Combines a row's split partials per query head: the softmax's max M and
// sum Z over all visible keys, and the output sum_c o_c exp(m_c - M) / Z in
// the storage type (the output projection's input). M and 1/Z are kept for
// attention_scores.
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

template <class T>
__global__ void attention_combine_kernel(const ItemDesc* items, const int* row_item, ModelDims d, const float* partials,
                                         int split_bucket, int split_keys, float* stats, T* out) {
  const int row = int(blockIdx.y), g = int(blockIdx.x);
  const ItemDesc& it = items[row_item[row]];
  const int visible = it.n_before + (row - it.first_row) + 1;
  const int splits = (visible + split_keys - 1) / split_keys;  // each holds a key this row sees
  const int hd = d.head_dim, width = hd + 2;
  for (int e = int(threadIdx.x); e < d.group * hd; e += int(blockDim.x)) {
    const int h = e / hd, c = e % hd, head = g * d.group + h;
    const float* p = partials + (size_t(row) * d.heads + size_t(head)) * size_t(split_bucket) * width;
    float m = -INFINITY;
    for (int s = 0; s < splits; ++s) m = fmaxf(m, p[s * width + hd]);
    float z = 0.0f, o = 0.0f;
    for (int s = 0; s < splits; ++s) {
      const float w = expf(p[s * width + hd] - m);
      z += p[s * width + hd + 1] * w;
      o += p[s * width + c] * w;
    }
    const float inv = 1.0f / z;
    out[size_t(row) * d.q_dim + size_t(head) * hd + c] = from_f32<T>(o * inv);
    if (c == 0) {
      stats[(size_t(row) * d.heads + size_t(head)) * 2] = m;
      stats[(size_t(row) * d.heads + size_t(head)) * 2 + 1] = inv;
    }
  }
}

}  // namespace

void attention_combine(DType dtype, const ItemDesc* items, const int* row_item, int rows, const ModelDims& dims,
                       const AttentionScratch& s, void* out, int threads, gpu::Stream stream) {
  const dim3 grid(unsigned(dims.kv_heads), unsigned(rows));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(grid, dim3(unsigned(threads)), stream, attention_combine_kernel<T>)(
                       items, row_item, dims, s.partials, s.split_bucket, s.split_keys, s.stats,
                       static_cast<T*>(out)));
  gpu::check_launch("attention_combine");
}

}  // namespace H2O_KERN_NS
