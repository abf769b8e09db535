// RMSNorm of f32 rows into the storage type (the projections' input). The
// sum of squares is accumulated in double, as the CPU backend does, so the
// scale comes out the same.
#include "kernels/block_reduce.cuh"
#include "kernels/launch.h"

namespace h2o::kern {
namespace {

template <class T>
__global__ void rmsnorm_kernel(const float* x, const float* weight, T* out, const int* row_map, int dim, float eps) {
  H2O_SHARED(double, partials, [32]);
  const size_t row = blockIdx.x;
  const float* in = x + size_t(row_map ? row_map[row] : int(row)) * size_t(dim);
  double squares = 0;
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x)) squares += double(in[i]) * in[i];
  squares = block_reduce(squares, Sum{}, 0.0, partials);
  const float scale = float(1.0 / sqrt(squares / dim + eps));
  T* o = out + row * size_t(dim);
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x)) o[i] = from_f32<T>(weight[i] * (scale * in[i]));
}

}  // namespace

void rmsnorm(DType dtype, const float* x, const float* weight, void* out, const int* row_map, int rows, int dim,
             float eps, int threads, gpu::Stream stream) {
  if (rows == 0) return;
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(unsigned(rows)), dim3(unsigned(threads)), stream, rmsnorm_kernel<T>)(
                       x, weight, static_cast<T*>(out), row_map, dim, eps));
  gpu::check_launch("rmsnorm");
}

}  // namespace h2o::kern
