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
#include "kernels/matvec_common.cuh"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

using mv::kOutputs;
using mv::kThreads;
using mv::kWarps;
constexpr int kLoads = 8;                   // weight loads per lane per iteration: 8 x 16 B in flight
constexpr int kUnroll = kLoads / kOutputs;  // pieces per lane per weight row per iteration

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

// A block: kWarps warps in groups of `split`; the warps of a group share
// kOutputs weight rows, each taking every split-th tile of their columns.
template <class T, int R, bool kVector>
__global__ void __launch_bounds__(kThreads, mv::kMinBlocksPerSm)
    matvec_kernel(float* out, const T* x, const T* w, int in, int out_features, int split, bool accumulate) {
  constexpr int kValues = kOutputs * R, N = mv::pow2_at_least(kValues);
  H2O_SHARED(float, partial, [kWarps][kValues]);
  const mv::WarpRows at(split, out_features);
  float sums[N] = {};  // [f * R + r], zero-padded to N
  if (at.live > 0)
    accumulate_columns<T, R, kVector>(sums, x, w + size_t(at.first) * size_t(in), in, at.live, at.slice, split,
                                      at.lane);
  const float total = mv::warp_reduce_scatter<N>(sums, at.lane);
  mv::write_outputs<R, N>(partial, total, at, split, out, out_features, out_features, accumulate);
}

// Warps per weight row (mv::split_for_tiles), a tile being kUnroll x 32 pieces.
int split_for(int out_features, int pieces) {
  return mv::split_for_tiles(out_features, (pieces + 32 * kUnroll - 1) / (32 * kUnroll));
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

}  // namespace H2O_KERN_NS
