// The cos and sin of every (slot, pair) angle, slot * frequency, as the CPU
// computes them (rope.cuh: in double, then rounded to float): the table the
// cut reads when it rotates a moved key to its new slot under rolling
// positions, filled once for every slot a cache may keep instead of twice
// per moved pair in every (layer, KV head).
#include "kernels/launch.h"
#include "kernels/rope.cuh"

namespace H2O_KERN_NS {
namespace {

__global__ void rope_slots_kernel(const double* freq, float* table, int rows, int half) {
  const long long total = (long long)rows * half;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
    const int slot = int(e / half), pair = int(e % half);
    rope_angle(double(slot), freq[pair], &table[2 * e], &table[2 * e + 1]);
  }
}

}  // namespace

void rope_slots(const double* freq, float* table, int rows, int half, int threads, gpu::Stream stream) {
  if (rows <= 0 || half <= 0) return;
  const long long total = (long long)rows * half;
  const unsigned blocks = unsigned((total + threads - 1) / threads < 1024 ? (total + threads - 1) / threads : 1024);
  H2O_LAUNCH(dim3(blocks), dim3(unsigned(threads)), stream, rope_slots_kernel)(freq, table, rows, half);
  gpu::check_launch("rope_slots");
}

}  // namespace H2O_KERN_NS
