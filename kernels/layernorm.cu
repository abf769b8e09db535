// LayerNorm with a weight and a bias (GPT-NeoX) of f32 rows into the storage
// type (the projections' input): (x - mean) / sqrt(var + eps) * w + b. Built
// as rmsnorm.cu is: a block per row, sized to the row (about four elements a
// thread, up to 1024), so the sums' order depends on the row width alone.
// Where the next product takes 8-bit inputs, the block writes them too
// (int8_quantize.cuh). The mean and the variance are f32 block sums, the
// variance taken about the mean in a second pass over the row (which L1 still
// holds) rather than as E[x²] - mean², which cancels when the mean is large
// against the spread.

#include "kernels/block_reduce.cuh"
#include "kernels/int8_quantize.cuh"
#include "kernels/launch.h"

namespace H2O_KERN_NS {
namespace {

template <class T>
__global__ void __launch_bounds__(kMaxRowThreads)
    layernorm_kernel(const float* x, const float* weight, const float* bias, T* out, const int* row_map, int dim,
                     float eps, Int8Rows int8) {
  H2O_SHARED(float, partials, [32]);
  const size_t row = blockIdx.x;
  const float* in = x + size_t(row_map ? row_map[row] : int(row)) * size_t(dim);
  float sum = 0;
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x)) sum += in[i];
  const float mean = block_reduce(sum, Sum{}, 0.0f, partials) / float(dim);
  float squares = 0;
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x)) {
    const float c = in[i] - mean;
    squares += c * c;
  }
  const float var = block_reduce(squares, Sum{}, 0.0f, partials) / float(dim);
  const float scale = 1.0f / sqrtf(var + eps);
  T* o = out + row * size_t(dim);
  for (int i = int(threadIdx.x); i < dim; i += int(blockDim.x))
    o[i] = from_f32<T>((in[i] - mean) * scale * weight[i] + bias[i]);
  quantize_row_int8(o, int8, int(row), dim);
}

}  // namespace

void layernorm(DType dtype, const float* x, const float* weight, const float* bias, void* out, const int* row_map,
               int rows, int dim, float eps, gpu::Stream stream, const Int8Rows& int8) {
  if (rows == 0) return;
  const int threads = row_block_threads(dim);
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(unsigned(rows)), dim3(unsigned(threads)), stream, layernorm_kernel<T>)(
                       x, weight, bias, static_cast<T*>(out), row_map, dim, eps, int8));
  gpu::check_launch("layernorm");
}

}  // namespace H2O_KERN_NS
