#pragma once
// What the two matrix-vector kernels share (matvec.cu for f32/f16/bf16 weights
// and inputs, matvec_quant.cu for block formats and f32 inputs): the block
// shape, the split rule, the warp's reduce-scatter and the block's last step.
// Both give each warp kOutputs consecutive weight rows for R x rows; the warps
// of a block that split one weight row's columns meet in shared memory.
#include "kernels/portable.h"

namespace H2O_KERN_NS::mv {

constexpr int kWarps = 4;  // warps per block
constexpr int kThreads = 32 * kWarps;
constexpr int kOutputs = 4;  // weight rows per warp: each x load serves 4 of them
// The split below aims at this many blocks: ~4 blocks (16 warps, 64 KB of
// weight loads in flight) per SM on 132 SMs, enough to cover HBM latency.
constexpr int kFillBlocks = 512;
// Blocks per SM the registers must allow (__launch_bounds__): at most 128
// registers a thread. Without a minimum, ptxas held the 1-row kernels to 40
// registers, too few for 8 loads in flight (32 registers of destinations alone).
constexpr int kMinBlocksPerSm = 4;

__host__ __device__ constexpr int pow2_at_least(int n) { return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2); }

// Warps per weight row for a row of `tiles` warp-wide iterations: the
// smallest power of two that gives kFillBlocks blocks, at most kWarps, and
// never more than the row has tiles (a warp with no columns would only add a
// partial of zero). From the shape alone, so the sums' order is too.
// Llama-2-7B's shapes all reach 512 blocks (out 4096: split 2 at 1 row).
// Where the tiles stop it (stories15M's 288 x 288: 18 blocks in f16), each
// warp has one tile: the whole matrix is requested in one round of loads,
// and more blocks could not shorten that one trip to memory.
inline int split_for_tiles(int out_features, int tiles) {
  int split = 1;
  auto blocks = [&](int s) { return (out_features + kOutputs * (kWarps / s) - 1) / (kOutputs * (kWarps / s)); };
  while (split < kWarps && blocks(split) < kFillBlocks && 2 * split <= tiles) split *= 2;
  return split;
}

// One reduce-scatter level at lane distance kOffset: each lane keeps one
// half of its 2 kHalf values, sends the other to lane ^ kOffset and adds
// what that lane sent it; then the next level on the kept half.
template <int kHalf, int kOffset, int N>
__device__ __forceinline__ void reduce_scatter_level(float (&v)[N], int lane) {
  if constexpr (kHalf >= 1) {
    const bool upper = (lane & kOffset) != 0;
    H2O_UNROLL
    for (int i = 0; i < kHalf; ++i) {
      const float send = upper ? v[i] : v[i + kHalf];
      const float keep = upper ? v[i + kHalf] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, kOffset);
    }
    reduce_scatter_level<kHalf / 2, kOffset / 2>(v, lane);
  }
}

// Sums each of the N values (N a power of two <= 32) over the warp's lanes.
// Reduce-scatter: at lane distances 16, 8, ... each lane keeps half of its
// values, so N values take N - 1 + 5 - log2 N shuffles instead of 5 N; once
// one value is left, plain butterflies. Every value meets its partners in
// the butterfly order 16, 8, 4, 2, 1 (and a + b is b + a), so its bits do not
// depend on N. Lane l ends with the total of value l / (32 / N).
template <int N>
__device__ __forceinline__ float warp_reduce_scatter(float (&v)[N], int lane) {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "N: a power of two up to 32");
  reduce_scatter_level<N / 2, 16>(v, lane);
  H2O_UNROLL
  for (int offset = 16 / N; offset >= 1; offset /= 2) v[0] += __shfl_xor_sync(0xffffffffu, v[0], offset);
  return v[0];
}

// Where a warp's kOutputs weight rows start: kWarps warps in groups of
// `split`, each group on kOutputs rows, each warp of a group on every
// split-th tile of their columns (slice).
struct WarpRows {
  int lane, warp, groups, slice, block_first, first, live;
  __device__ WarpRows(int split, int out_features) {
    lane = int(threadIdx.x) & 31;
    warp = int(threadIdx.x) >> 5;
    groups = kWarps / split;
    slice = warp % split;
    block_first = int(blockIdx.x) * groups * kOutputs;
    first = block_first + (warp / split) * kOutputs;
    live = imin(kOutputs, out_features - first);
  }
};

// The block's last step, after each warp reduced its kOutputs x R sums
// ([f * R + r], lane l holding value l / (32 / N) as `total`): the sums in
// shared memory, then one thread per (row, output of the block) adds its
// group's slices in warp order and writes out[r * out_stride + o], plus what
// is there when `accumulate`; consecutive threads on consecutive outputs.
template <int R, int N>
__device__ __forceinline__ void write_outputs(SharedPtr<float[kOutputs * R]> partial, float total, const WarpRows& at,
                                              int split, float* out, int out_stride, int out_features,
                                              bool accumulate) {
  const int lanes_per_value = 32 / N, value = at.lane / lanes_per_value;
  if (at.lane % lanes_per_value == 0 && value < kOutputs * R) partial[at.warp][value] = total;
  __syncthreads();
  const int t = int(threadIdx.x), outputs = at.groups * kOutputs;
  if (t >= outputs * R) return;
  const int r = t / outputs, k = t % outputs, o = at.block_first + k;
  if (o >= out_features) return;
  const int g = k / kOutputs, f = k % kOutputs;
  float sum = partial[g * split][f * R + r];
  for (int s = 1; s < split; ++s) sum += partial[g * split + s][f * R + r];
  float* dst = out + size_t(r) * size_t(out_stride) + size_t(o);
  *dst = accumulate ? *dst + sum : sum;
}

}  // namespace H2O_KERN_NS::mv
