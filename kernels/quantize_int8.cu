// The projections' inputs in 8 bits for matvec_int8 (int8_activations.h):
// one thread per block of 32, its eight 16-byte loads in flight together, the
// rounding rule shared with the host (quantize_int8_block): two terms' codes
// and the block's scales and sums. A decode step's
// inputs are at most 8 x 11008 values: a few hundred threads, one small launch
// per projection input, read again from L2 by the product right after.
#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "kernels/int8_activations.h"
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) quantize_int8_kernel(const float* x, int in, int blocks, Int8Rows out) {
  const int b = int(blockIdx.x) * kThreads + int(threadIdx.x);
  if (b >= blocks) return;
  const int per_row = in / kInt8BlockElems, r = b / per_row, k = b % per_row;
  const float* src = x + size_t(r) * size_t(in) + size_t(k) * kInt8BlockElems;
  float v[kInt8BlockElems];
  H2O_UNROLL
  for (int i = 0; i < kInt8BlockElems / 4; ++i) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(src) + i);
    v[4 * i] = __uint_as_float(u.x);
    v[4 * i + 1] = __uint_as_float(u.y);
    v[4 * i + 2] = __uint_as_float(u.z);
    v[4 * i + 3] = __uint_as_float(u.w);
  }
  uint32_t codes[2][kInt8BlockElems / 4];
  Int8Block block;
  quantize_int8_block(v, codes, block);
  H2O_UNROLL
  for (int t = 0; t < 2; ++t) {
    uint4* dst = reinterpret_cast<uint4*>(out.codes[t] + size_t(r) * size_t(in) + size_t(k) * kInt8BlockElems);
    dst[0] = make_uint4(codes[t][0], codes[t][1], codes[t][2], codes[t][3]);
    dst[1] = make_uint4(codes[t][4], codes[t][5], codes[t][6], codes[t][7]);
  }
  out.blocks[b] = block;
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
