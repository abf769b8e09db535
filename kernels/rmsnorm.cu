// RMSNorm of f32 rows into the storage type (the projections' input). The
// sum of squares is accumulated in double, as the CPU backend does, so the
// scale comes out the same. A row is one block sized to the row (about four
// elements a thread, up to 1024 threads) rather than the tuning's block
// size: a decode step normalises one short row per session, and with 128
// threads a 4096-wide row took 32 dependent loads a thread on one SM
// (19 µs a launch on the H200, 18 % of a Llama-2-7B step). The block size
// depends on the row width alone, so the sums' order does too. Where the next
// product takes 8-bit inputs, the block writes them too (int8_quantize.cuh).

#include "kernels/block_reduce.cuh"
#include "kernels/int8_quantize.cuh"
#include "kernels/launch.h"

namespace H2O_KERN_NS {
namespace {

template <class T>
__global__ void __launch_bounds__(kMaxRowThreads)
    rmsnorm_kernel(const float* x, const float* weight, T* out, const int* row_map, int dim, float eps, Int8Rows int8) {
  H2O_SHARED(double, partials, [32]);
  const size_t row = blockIdx.x;
  const float* in = x + size_t(row_map ? row_map[row] : int(row)) * size_t(dim);
  double squares = 0;
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x)) squares += double(in[i]) * in[i];
  squares = block_reduce(squares, Sum{}, 0.0, partials);
  const float scale = float(1.0 / sqrt(squares / dim + eps));
  T* o = out + row * size_t(dim);
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x)) o[i] = from_f32<T>(weight[i] * (scale * in[i]));
  quantize_row_int8(o, int8, int(row), dim);
}

}  // namespace

void rmsnorm(DType dtype, const float* x, const float* weight, void* out, const int* row_map, int rows, int dim,
             float eps, gpu::Stream stream, const Int8Rows& int8) {
  if (rows == 0) return;
  const int threads = row_block_threads(dim);
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(unsigned(rows)), dim3(unsigned(threads)), stream, rmsnorm_kernel<T>)(
                       x, weight, static_cast<T*>(out), row_map, dim, eps, int8));
  gpu::check_launch("rmsnorm");
}

}  // namespace H2O_KERN_NS
