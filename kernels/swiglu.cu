// SwiGLU: silu(gate) * up, from the fused projection's [gate | up] row, into
// the storage type (the down projection's input).
#include "kernels/launch.h"
#include <algorithm>

#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

template <class T>
__global__ void swiglu_kernel(const float* gate_up, T* out, int rows, int hidden) {
  const size_t total = size_t(rows) * size_t(hidden);
  for (size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += size_t(gridDim.x) * blockDim.x) {
    const size_t r = e / size_t(hidden), i = e % size_t(hidden);
    const float g = gate_up[r * 2 * size_t(hidden) + i];
    const float u = gate_up[r * 2 * size_t(hidden) + size_t(hidden) + i];
    out[e] = from_f32<T>(g / (1.0f + expf(-g)) * u);
  }
}

}  // namespace

void swiglu(DType dtype, const float* gate_up, void* out, int rows, int hidden, int threads, gpu::Stream stream) {
  const size_t total = size_t(rows) * size_t(hidden);
  const unsigned blocks = unsigned(std::min<size_t>((total + size_t(threads) - 1) / size_t(threads), 1024));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(blocks), dim3(unsigned(threads)), stream, swiglu_kernel<T>)(
                       gate_up, static_cast<T*>(out), rows, hidden));
  gpu::check_launch("swiglu");
}

}  // namespace H2O_KERN_NS
