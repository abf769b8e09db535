// Bias add: rows[r][c] += bias[c] for every row of a projection's output
// (Qwen2's q/k/v biases, on the fused Q|K|V row), in f32 as the CPU adds them.
#include "kernels/launch.h"
#include <algorithm>

#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

__global__ void bias_add_kernel(float* rows, const float* bias, int row_count, int width) {
  const size_t total = size_t(row_count) * size_t(width);
  for (size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += size_t(gridDim.x) * blockDim.x)
    rows[e] += bias[e % size_t(width)];
}

}  // namespace

void bias_add(float* rows, const float* bias, int row_count, int width, int threads, gpu::Stream stream) {
  const size_t total = size_t(row_count) * size_t(width);
  const unsigned blocks = unsigned(std::min<size_t>((total + size_t(threads) - 1) / size_t(threads), 1024));
  H2O_LAUNCH(dim3(blocks), dim3(unsigned(threads)), stream, bias_add_kernel)(rows, bias, row_count, width);
  gpu::check_launch("bias_add");
}

}  // namespace H2O_KERN_NS
