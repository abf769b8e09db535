// Token embedding: each row takes its token's row of the table, widened to f32.
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

template <class T>
__global__ void embed_kernel(const int* tokens, const T* table, float* x, int dim) {
  const size_t row = blockIdx.x;
  const T* from = table + size_t(tokens[row]) * size_t(dim);
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x)) x[row * size_t(dim) + size_t(i)] = to_f32(from[i]);
}

}  // namespace

void embed(DType dtype, const int* tokens, const void* table, float* x, int rows, int dim, int threads,
           gpu::Stream stream) {
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(unsigned(rows)), dim3(unsigned(threads)), stream, embed_kernel<T>)(
                       tokens, static_cast<const T*>(table), x, dim));
  gpu::check_launch("embed");
}

}  // namespace H2O_KERN_NS
