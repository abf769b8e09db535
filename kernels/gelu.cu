// The GELU MLP's activation (GPT-NeoX): gelu(up + b3) from the up
// projection's f32 rows, into the storage type (the down projection's
// input). The exact GELU, x/2 · (1 + erf(x/√2)), as Hugging Face's "gelu"
// (not the tanh approximation). The up bias is added here rather than by a
// bias_add launch of its own: one pass over the rows instead of two. Where
// the down projection takes 8-bit inputs, their 8-bit form too, as swiglu.cu.
#include <algorithm>

#include "kernels/launch.h"
#include "kernels/int8_quantize.cuh"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

__device__ __forceinline__ float gelu_of(float u) { return 0.5f * u * (1.0f + erff(u * 0.70710678118654752f)); }

template <class T>
__global__ void gelu_kernel(const float* up, const float* bias, T* out, int rows, int hidden, Int8Rows int8) {
  if constexpr (sizeof(T) == sizeof(float)) {
    if (int8.in != 0) {  // the outputs and their 8-bit form (int8_quantize.cuh)
      return write_rows_int8(reinterpret_cast<float*>(out), rows, hidden, int8, [&](int r, int i) {
        return gelu_of(up[size_t(r) * size_t(hidden) + size_t(i)] + (bias ? bias[i] : 0.0f));
      });
    }
  }
  const size_t total = size_t(rows) * size_t(hidden), stride = size_t(gridDim.x) * blockDim.x;
  for (size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride)
    out[e] = from_f32<T>(gelu_of(up[e] + (bias ? bias[e % size_t(hidden)] : 0.0f)));
}

}  // namespace

void gelu(DType dtype, const float* up, const float* bias, void* out, int rows, int hidden, int threads,
          gpu::Stream stream, const Int8Rows& int8) {
  const size_t total = size_t(rows) * size_t(hidden);
  if (total == 0) return;
  const unsigned blocks = unsigned(std::min<size_t>((total + size_t(threads) - 1) / size_t(threads), 1024));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(blocks), dim3(unsigned(threads)), stream, gelu_kernel<T>)(
                       up, bias, static_cast<T*>(out), rows, hidden, int8));
  gpu::check_launch("gelu");
}

}  // namespace H2O_KERN_NS
