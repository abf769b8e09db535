// Attention captures, trimmed on the device so that only what the plan asks
// for crosses to the host (core/runtime/capture.h): per unit either the key
// positions of one KV head at the kept slots, or one captured head's row —
// a query head's probabilities, or the group mean — at the kept slots, with
// the row's share of mass on its top_k keys measured over every key first.
#include "kernels/block_reduce.cuh"
#include "kernels/launch.h"

namespace H2O_KERN_NS {
namespace {

constexpr int kAllHeads = -2, kGroupMean = -1;  // as core/runtime/capture.h

__global__ void capture_kernel(const ItemDesc* items, const CaptureUnit* units, ModelDims d) {
  H2O_SHARED(double, sum_slots, [32]);
  H2O_SHARED(int, count_slots, [32]);
  const CaptureUnit u = units[blockIdx.x];
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  if (u.kind == 1) {
    const ItemDesc& it = items[u.item];
    const int32_t* pos = it.cache.pos + (size_t(u.layer) * d.kv_heads + u.captured) * size_t(it.cache.cap);
    for (int s = tid; s < u.n_slots; s += threads) u.out_positions[s] = pos[u.slots[s]];
    return;
  }
  // The captured head's row over every key, as the CPU backend builds it.
  const size_t stride = size_t(u.n);
  const float* row = u.probs + size_t(u.row) * d.heads * stride;
  for (int j = tid; j < u.n; j += threads) {
    float v;
    if (u.head == kGroupMean) {
      const float weight = 1.0f / float(d.group);
      v = 0.0f;
      for (int h = 0; h < d.group; ++h) v += weight * row[size_t(u.captured * d.group + h) * stride + j];
    } else {
      const int head = u.head == kAllHeads ? u.captured : u.head;
      v = row[size_t(head) * stride + j];
    }
    u.work[j] = v;
  }
  __syncthreads();
  for (int s = tid; s < u.n_slots; s += threads) u.out_probs[s] = u.work[u.slots[s]];
  if (u.top_k <= 0) return;

  // Share of the row's mass on its top_k values: those above the k-th
  // largest, plus as many copies of it as complete k.
  const int k = imin(u.top_k, u.n);
  const auto key = [&](int j) -> unsigned long long {
    const float v = u.work[j];
    return v > 0.0f ? __float_as_uint(v) : 0u;  // probabilities are >= 0; -0 and 0 alike
  };
  const unsigned long long kth = block_kth_largest(0, u.n, k, key);
  double total = 0, above = 0;
  int count_above = 0;
  for (int j = tid; j < u.n; j += threads) {
    total += u.work[j];
    if (key(j) > kth) above += u.work[j], ++count_above;
  }
  total = block_reduce(total, Sum{}, 0.0, sum_slots);
  above = block_reduce(above, Sum{}, 0.0, sum_slots);
  count_above = block_reduce(count_above, Sum{}, 0, count_slots);
  if (tid == 0) {
    const double head_mass = above + double(k - count_above) * double(__uint_as_float(unsigned(kth)));
    *u.out_share = total > 0 ? head_mass / total : __longlong_as_double(0x7ff8000000000000LL);  // NaN: no share
  }
}

}  // namespace

void capture(const ItemDesc* items, const CaptureUnit* units, int unit_count, const ModelDims& dims, int threads,
             gpu::Stream stream) {
  if (unit_count == 0) return;
  H2O_LAUNCH(dim3(unsigned(unit_count)), dim3(unsigned(threads)), stream, capture_kernel)(items, units, dims);
  gpu::check_launch("capture");
}

}  // namespace H2O_KERN_NS
