// The projections' inputs in 8 bits for matvec_int8 (int8_activations.h):
// one thread per block of 32 (int8_quantize.cuh), the rounding rule shared
// with the host: two terms' codes and the block's scales and sums. For the
// inputs no producer wrote in 8 bits (an attention output whose heads are not
// a multiple of 32; a caller of Blas::gemm that hands it f32 rows alone): at
// most 8 x 11008 values, a few hundred threads, read again from L2 by the
// product right after.
#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "kernels/int8_quantize.cuh"
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) quantize_int8_kernel(const float* x, int in, int blocks, Int8Rows out) {
  const int b = int(blockIdx.x) * kThreads + int(threadIdx.x);
  if (b >= blocks) return;
  const int per_row = in / kInt8BlockElems, r = b / per_row, k = b % per_row;
  quantize_int8_at(x + size_t(r) * size_t(in) + size_t(k) * kInt8BlockElems, out, r, k);
}

}  // namespace

void quantize_int8(const float* x, int rows, int in, const Int8Rows& out, gpu::Stream stream) {
  if (rows <= 0) return;
  if (in % kInt8BlockElems != 0 || in != out.in || reinterpret_cast<uintptr_t>(x) % 16 != 0)
    throw Error("quantize_int8: rows of " + std::to_string(in) + " (a multiple of 32 on 16 bytes, as `out` holds)");
  const int blocks = rows * (in / kInt8BlockElems);
  H2O_LAUNCH(dim3(unsigned((blocks + kThreads - 1) / kThreads)), dim3(kThreads), stream, quantize_int8_kernel)(
      x, in, blocks, out);
  gpu::check_launch("quantize_int8");
}

}  // namespace H2O_KERN_NS
