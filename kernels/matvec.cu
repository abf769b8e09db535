// Matrix-vector products for 1..8 rows: the projections and the classifier
// of decode steps (Blas::gemm's rule in blas.h). At a few rows a projection
// is bound by reading its weights once (each weight element takes part in
// at most 8 multiply-adds), so this kernel is built to stream them:
//  - each warp owns kOutputs consecutive weight rows and walks their columns
//    with 16-byte loads (4 floats or 8 halves per lane), kLoads of them in
//    flight per lane before any arithmetic;
//  - every x row is loaded (read-only path, L1/L2-resident: x is a few KB)
//    once per piece of columns and serves the warp's kOutputs weight rows, so
//    the weights are read once per call for all rows and x costs a fraction
//    of that;
//  - the rows count is a template parameter, so the kOutputs x rows sums stay
//    in registers;
//  - the lanes' sums meet in a reduce-scatter of warp shuffles (fixed order),
//    the warps that split one weight row meet in shared memory (fixed order).
// The sum for one output and one row is the same whatever the other rows of
// the call are (batched or one by one gives the same bits); it depends on
// the shape alone (in, out, type: the vector width and the split), never on
// the device, so the f32 path is deterministic run to run and GPU to GPU.
#include <cstdint>
#include <string>

#include "kernels/launch.h"
#include "kernels/portable.h"

// Loops over compile-time counts unrolled, so the arrays they index stay in
// registers (unless portable.h already says how).
#ifndef H2O_UNROLL
#if defined(__CUDACC__) || defined(__clang__)
#define H2O_UNROLL _Pragma("unroll")
#else
#define H2O_UNROLL _Pragma("GCC unroll 32")
#endif
#endif

namespace h2o::kern {
namespace {

constexpr int kWarps = 4;                   // warps per block
constexpr int kThreads = 32 * kWarps;
constexpr int kOutputs = 4;                 // weight rows per warp: each x load serves 4 of them
constexpr int kLoads = 8;                   // weight loads per lane per iteration: 8 x 16 B in flight
constexpr int kUnroll = kLoads / kOutputs;  // pieces per lane per weight row per iteration
// The split below aims at this many blocks: ~4 blocks (16 warps, 64 KB of
// weight loads in flight) per SM on 132 SMs, enough to cover HBM latency.
constexpr int kFillBlocks = 512;
// Blocks per SM the registers must allow (__launch_bounds__): at most 128
// registers a thread. Without a minimum, ptxas held the 1-row kernels to 40
// registers, too few for 8 loads in flight (32 registers of destinations alone).
constexpr int kMinBlocksPerSm = 4;

// 16 bytes loaded by one instruction (ld.global.nc.v4 under nvcc).
#if defined(__CUDACC__)
using Pack = uint4;
#else
struct alignas(16) Pack {
  unsigned x, y, z, w;
};
#endif

// One 32-bit word of weights or x widened to f32: 1 float, or 2 halves / bfloats.
__device__ __forceinline__ void widen_word(unsigned u, float* out, float) { out[0] = __uint_as_float(u); }
__device__ __forceinline__ void widen_word(unsigned u, float* out, __nv_bfloat16) {
  out[0] = __uint_as_float(u << 16);  // bf16 is the top half of an f32: exact
  out[1] = __uint_as_float(u & 0xffff0000u);
}
__device__ __forceinline__ void widen_word(unsigned u, float* out, __half) {
#if defined(__CUDACC__)
  out[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(u & 0xffffu)));
  out[1] = __half2float(__ushort_as_half(static_cast<unsigned short>(u >> 16)));
#else
  out[0] = f16_to_f32(static_cast<uint16_t>(u & 0xffffu));
  out[1] = f16_to_f32(static_cast<uint16_t>(u >> 16));
#endif
}

// `n` consecutive elements of T in registers: one 16-byte load (kVector) or
// one element (any `in`, any alignment).
template <class T, bool kVector>
struct Piece {
  static constexpr int n = 16 / int(sizeof(T));
  Pack raw;
  __device__ __forceinline__ void load(const T* p) { raw = __ldg(reinterpret_cast<const Pack*>(p)); }
  __device__ __forceinline__ void widen(float (&out)[n]) const {
    constexpr int per_word = n / 4;
    widen_word(raw.x, out, T{});
    widen_word(raw.y, out + per_word, T{});
    widen_word(raw.z, out + 2 * per_word, T{});
    widen_word(raw.w, out + 3 * per_word, T{});
  }
};
template <class T>
struct Piece<T, false> {
  static constexpr int n = 1;
  T raw;
  __device__ __forceinline__ void load(const T* p) { raw = __ldg(p); }
  __device__ __forceinline__ void widen(float (&out)[1]) const { out[0] = to_f32(raw); }
};

__host__ __device__ constexpr int pow2_at_least(int n) { return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2); }

// This warp's share of the columns of `live` (<= kOutputs) weight rows
// starting at `w`, for R rows of x: sums[f * R + r] += w[f][i] x[r][i] over
// the pieces slice, slice + split, ... (each kUnroll x 32 pieces wide).
template <class T, int R, bool kVector, int N>
__device__ __forceinline__ void accumulate_columns(float (&sums)[N], const T* x, const T* w, int in, int live,
                                                   int slice, int split, int lane) {
  using P = Piece<T, kVector>;
  constexpr int V = P::n;
  const int pieces = in / V;  // kVector only where V divides `in`
  for (int base = slice * 32 * kUnroll; base < pieces; base += split * 32 * kUnroll) {
    // Every weight load of the iteration first, so they are in flight together.
    P wp[kUnroll][kOutputs];
H2O_UNROLL
    for (int u = 0; u < kUnroll; ++u)
H2O_UNROLL
      for (int f = 0; f < kOutputs; ++f) {
        const int p = base + u * 32 + lane;
        if (p < pieces && f < live) wp[u][f].load(w + size_t(f) * size_t(in) + size_t(p) * V);
        else wp[u][f] = P{};  // a missing row adds zeros (its output is not written)
      }
H2O_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const int p = base + u * 32 + lane;
      if (p >= pieces) break;
      float wf[kOutputs][V];
H2O_UNROLL
      for (int f = 0; f < kOutputs; ++f) wp[u][f].widen(wf[f]);
H2O_UNROLL
      for (int r = 0; r < R; ++r) {
        P xp;
        xp.load(x + size_t(r) * size_t(in) + size_t(p) * V);
        float xf[V];
        xp.widen(xf);
H2O_UNROLL
        for (int f = 0; f < kOutputs; ++f)
H2O_UNROLL
          for (int k = 0; k < V; ++k) sums[f * R + r] += wf[f][k] * xf[k];
      }
    }
  }
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

// A block: kWarps warps in groups of `split`; the warps of a group share
// kOutputs weight rows, each taking every split-th tile of their columns.
template <class T, int R, bool kVector>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    matvec_kernel(float* out, const T* x, const T* w, int in, int out_features, int split, bool accumulate) {
  constexpr int kValues = kOutputs * R, N = pow2_at_least(kValues);
  H2O_SHARED(float, partial, [kWarps][kValues]);
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int groups = kWarps / split, group = warp / split, slice = warp % split;
  const int block_first = int(blockIdx.x) * groups * kOutputs;
  const int first = block_first + group * kOutputs;
  const int live = imin(kOutputs, out_features - first);
  float sums[N] = {};  // [f * R + r], zero-padded to N
  if (live > 0)
    accumulate_columns<T, R, kVector>(sums, x, w + size_t(first) * size_t(in), in, live, slice, split, lane);
  const float total = warp_reduce_scatter<N>(sums, lane);
  const int lanes_per_value = 32 / N, value = lane / lanes_per_value;
  if (lane % lanes_per_value == 0 && value < kValues) partial[warp][value] = total;
  __syncthreads();
  // One thread per (row, output of the block): the group's slices in order,
  // consecutive threads on consecutive outputs of one row.
  const int t = int(threadIdx.x), outputs = groups * kOutputs;
  if (t >= outputs * R) return;
  const int r = t / outputs, k = t % outputs, o = block_first + k;
  if (o >= out_features) return;
  const int g = k / kOutputs, f = k % kOutputs;
  float sum = partial[g * split][f * R + r];
  for (int s = 1; s < split; ++s) sum += partial[g * split + s][f * R + r];
  float* dst = out + size_t(r) * size_t(out_features) + size_t(o);
  *dst = accumulate ? *dst + sum : sum;
}

// Warps per weight row: the smallest power of two that gives kFillBlocks
// blocks, at most kWarps, and never more than the row has tiles (a warp
// with no columns would only add a partial of zero). From the shape alone.
// Llama-2-7B's shapes all reach 512 blocks (out 4096: split 2 at 1 row).
// Where the tiles stop it (stories15M's 288 x 288: 18 blocks in f16), each
// warp has one tile: the whole matrix is requested in one round of loads,
// and more blocks could not shorten that one trip to memory.
int split_for(int out_features, int pieces) {
  const int tiles = (pieces + 32 * kUnroll - 1) / (32 * kUnroll);
  int split = 1;
  auto blocks = [&](int s) { return (out_features + kOutputs * (kWarps / s) - 1) / (kOutputs * (kWarps / s)); };
  while (split < kWarps && blocks(split) < kFillBlocks && 2 * split <= tiles) split *= 2;
  return split;
}

template <class T, int R = 1>
void launch_rows(int rows, float* out, const T* x, const T* w, int in, int out_features, bool accumulate,
                 gpu::Stream stream) {
  if constexpr (R < kMatvecMaxRows) {
    if (rows != R) return launch_rows<T, R + 1>(rows, out, x, w, in, out_features, accumulate, stream);
  }
  constexpr int V = Piece<T, true>::n;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  // 16-byte loads need every weight row and x row to start on 16 bytes: in %
  // V == 0. Otherwise (stories260K's hidden 172 in f16) one element per load.
  const bool vector = aligned && in % V == 0;
  const int split = split_for(out_features, vector ? in / V : in);
  const int per_block = kOutputs * (kWarps / split);
  const dim3 grid(unsigned((out_features + per_block - 1) / per_block)), block(kThreads);
  if (vector)
    H2O_LAUNCH(grid, block, stream, matvec_kernel<T, R, true>)(out, x, w, in, out_features, split, accumulate);
  else
    H2O_LAUNCH(grid, block, stream, matvec_kernel<T, R, false>)(out, x, w, in, out_features, split, accumulate);
}

}  // namespace

void matvec(DType dtype, float* out, const void* x, const void* w, int rows, int in, int out_features,
            bool accumulate, gpu::Stream stream) {
  if (rows <= 0 || out_features <= 0) return;
  if (rows > kMatvecMaxRows)
    throw Error("matvec: " + std::to_string(rows) + " rows (at most " + std::to_string(kMatvecMaxRows) + ")");
  H2O_WITH_STORAGE(dtype, T,
                   launch_rows<T>(rows, out, static_cast<const T*>(x), static_cast<const T*>(w), in, out_features,
                                  accumulate, stream));
  gpu::check_launch("matvec");
}

}  // namespace h2o::kern
