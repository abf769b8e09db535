// Combines a row's split partials per query head: the softmax's max M and
// sum Z over all visible keys, and the output sum_c o_c exp(m_c - M) / Z in
// the storage type (the output projection's input). M and 1/Z are kept for
// attention_scores. Where the output projection takes 8-bit inputs, each
// block writes its head's blocks of 32 of them too (int8_quantize.cuh; a
// head_dim that is a multiple of 32, so no block straddles two heads).
//
// One block per (query head, row), a thread per channel: M and Z are block
// reductions over the splits (fixed order, so deterministic), and every
// channel's sum over the splits is independent loads, coalesced across the
// block. (One block per KV head with a serial max and sum per channel left
// TinyLlama's 66 splits to 4 blocks: 31 µs a launch on the H200.)
#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "kernels/block_reduce.cuh"
#include "kernels/int8_quantize.cuh"
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

template <class T>
__global__ void attention_combine_kernel(const ItemDesc* items, const int* row_item, ModelDims d, const float* partials,
                                         int split_bucket, int split_keys, float* stats, T* out,
                                         Int8Rows int8) {
  H2O_SHARED(float, scratch, [32]);
  const int head = int(blockIdx.x), row = int(blockIdx.y), tid = int(threadIdx.x), step = int(blockDim.x);
  const ItemDesc& it = items[row_item[row]];
  const int visible = it.n_before + (row - it.first_row) + 1;
  const int splits = (visible + split_keys - 1) / split_keys;  // each holds a key this row sees
  const int hd = d.head_dim, width = hd + 2;
  const float* p = partials + (size_t(row) * d.heads + size_t(head)) * size_t(split_bucket) * width;

  // The largest of the splits' maxima, then the sum of their sums rescaled to it.
  float m = -INFINITY;
  for (int s = tid; s < splits; s += step) m = fmaxf(m, p[s * width + hd]);
  m = block_reduce(m, Max{}, -INFINITY, scratch);
  float z = 0.0f;
  for (int s = tid; s < splits; s += step) z += p[s * width + hd + 1] * expf(p[s * width + hd] - m);
  const float inv = 1.0f / block_reduce(z, Sum{}, 0.0f, scratch);

  // Each channel: the splits' unnormalised outputs, rescaled and normalised.
  T* o_head = out + size_t(row) * d.q_dim + size_t(head) * hd;
  for (int c = tid; c < hd; c += step) {
    float o = 0.0f;
    for (int s = 0; s < splits; ++s) o += p[s * width + c] * expf(p[s * width + hd] - m);
    o_head[c] = from_f32<T>(o * inv);
  }
  quantize_span_int8(o_head, int8, row, head * hd / kInt8BlockElems, hd / kInt8BlockElems);
  if (tid == 0) {
    stats[(size_t(row) * d.heads + size_t(head)) * 2] = m;
    stats[(size_t(row) * d.heads + size_t(head)) * 2 + 1] = inv;
  }
}

}  // namespace

void attention_combine(DType dtype, const ItemDesc* items, const int* row_item, int rows, const ModelDims& dims,
                       const AttentionScratch& s, void* out, gpu::Stream stream, const Int8Rows& int8) {
  if (int8.in != 0 && (dtype != DType::F32 || dims.head_dim % kInt8BlockElems != 0 || int8.in != dims.q_dim))
    throw Error("attention_combine: 8-bit rows of " + std::to_string(int8.in) + " for heads of " +
                std::to_string(dims.head_dim) + " (f32, a multiple of 32 and the query width; a bug)");
  const dim3 grid(unsigned(dims.heads), unsigned(rows));
  // A thread per channel, whole warps (block_reduce), at most 256 (longer heads loop).
  const unsigned threads = unsigned(std::min((dims.head_dim + 31) / 32 * 32, 256));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(grid, dim3(threads), stream, attention_combine_kernel<T>)(
                       items, row_item, dims, s.partials, s.split_bucket, s.split_keys, s.stats,
                       static_cast<T*>(out), int8));
  gpu::check_launch("attention_combine");
}

}  // namespace H2O_KERN_NS
