// SwiGLU: silu(gate) * up, from the fused projection's [gate | up] row, into
// the storage type (the down projection's input), and where that product
// takes 8-bit inputs, their 8-bit form too (one launch fewer).
#include "kernels/launch.h"
#include <algorithm>

#include "kernels/int8_quantize.cuh"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }

template <class T>
__global__ void swiglu_kernel(const float* gate_up, T* out, int rows, int hidden, Int8Rows int8) {
  if constexpr (sizeof(T) == sizeof(float)) {
    if (int8.in != 0) {  // the outputs and their 8-bit form (int8_quantize.cuh)
      return write_rows_int8(reinterpret_cast<float*>(out), rows, hidden, int8, [&](int r, int i) {
        const float* g = gate_up + size_t(r) * 2 * size_t(hidden) + size_t(i);
        return silu_times(g[0], g[hidden]);
      });
    }
  }
  const size_t total = size_t(rows) * size_t(hidden), stride = size_t(gridDim.x) * blockDim.x;
  for (size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const size_t r = e / size_t(hidden), i = e % size_t(hidden);
    out[e] = from_f32<T>(silu_times(gate_up[r * 2 * size_t(hidden) + i], gate_up[r * 2 * size_t(hidden) + size_t(hidden) + i]));
  }
}

}  // namespace

void swiglu(DType dtype, const float* gate_up, void* out, int rows, int hidden, int threads, gpu::Stream stream,
            const Int8Rows& int8) {
  const size_t total = size_t(rows) * size_t(hidden);
  const unsigned blocks = unsigned(std::min<size_t>((total + size_t(threads) - 1) / size_t(threads), 1024));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(blocks), dim3(unsigned(threads)), stream, swiglu_kernel<T>)(
                       gate_up, static_cast<T*>(out), rows, hidden, int8));
  gpu::check_launch("swiglu");
}

}  // namespace H2O_KERN_NS
