// Matrix-vector products for 1..8 rows with the weights in a block format
// (`--precision native`: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K as the file stores them,
// or f16) and f32 inputs: decode steps of quantised models. Built as
// matvec.cu is (matvec_common.cuh: kOutputs weight rows per warp, the same
// split rule, reduce-scatter and block epilogue); what differs is the weights:
//  - each lane takes one piece (32 elements, 16 for f16) of each of its warp's
//    kOutputs rows per iteration, consecutive lanes on consecutive pieces, so
//    a warp reads one stretch of each row; the kOutputs pieces' loads are all
//    issued before any is used (16-byte loads for Q4_K, Q5_K, f16; aligned
//    4-byte words for the 2-byte aligned Q8_0, Q4_0, Q6_K: quant_formats.cuh);
//  - the piece is dequantised in registers, word by word, by the functions the
//    CPU's dequantisation calls (core/model/quant_blocks.h): every weight is
//    the value the CPU holds, and only the sums differ from a float32 matmul
//    of the dequantised matrix, by the order of f32 additions;
//  - x stays f32 (16-byte loads of 4 consecutive inputs, L1/L2-resident),
//    each load serving the kOutputs rows.
// As in matvec.cu, a sum depends on the shape alone (the split), not on the
// other rows of the call or the device.
#include <cstdint>
#include <string>

#include "core/model/quant.h"
#include "kernels/launch.h"
#include "kernels/matvec_common.cuh"
#include "kernels/portable.h"
#include "kernels/quant_formats.cuh"

namespace H2O_KERN_NS {
namespace {

using mv::kOutputs;
using mv::kThreads;
using mv::kWarps;

__device__ __forceinline__ void load_x4(const float* p, float (&v)[4]) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  v[0] = __uint_as_float(u.x);
  v[1] = __uint_as_float(u.y);
  v[2] = __uint_as_float(u.z);
  v[3] = __uint_as_float(u.w);
}

// This warp's share of `live` (<= kOutputs) weight rows starting at `w`
// (`row_bytes` apart), for R rows of x: sums[f * R + r] += w[f][i] x[r][i]
// over the pieces slice * 32 + lane, then split * 32 further, ...
template <class F, int R, int N>
__device__ __forceinline__ void accumulate_pieces(float (&sums)[N], const float* x, const uint8_t* w,
                                                  size_t row_bytes, int in, int live, int slice, int split, int lane) {
  const int pieces = in / F::kPieceElems;
  for (int p = slice * 32 + lane; p < pieces; p += split * 32) {
    // Every row's loads first, so they are in flight together.
    typename F::Raw raw[kOutputs];
    H2O_UNROLL
    for (int f = 0; f < kOutputs; ++f)
      raw[f] = F::load(w + size_t(f < live ? f : 0) * row_bytes, p);  // a missing row re-reads row 0 (not written)
    typename F::Scales scale[kOutputs];
    H2O_UNROLL
    for (int f = 0; f < kOutputs; ++f) scale[f] = F::scales(raw[f], p);
    H2O_UNROLL
    for (int word = 0; word < F::kWords; ++word)
      H2O_UNROLL
      for (int g = 0; g < F::kGroups; ++g) {
        float v[kOutputs][F::kGroups][4];  // the other group's values are dead code, dropped by the compiler
        H2O_UNROLL
        for (int f = 0; f < kOutputs; ++f) F::decode(raw[f], scale[f], p, word, v[f]);
        const int e = F::offset(p, word, g);
        H2O_UNROLL
        for (int r = 0; r < R; ++r) {
          float xv[4];
          load_x4(x + size_t(r) * size_t(in) + size_t(e), xv);
          H2O_UNROLL
          for (int f = 0; f < kOutputs; ++f)
            H2O_UNROLL
            for (int k = 0; k < 4; ++k) sums[f * R + r] += v[f][g][k] * xv[k];
        }
      }
  }
}

template <class F, int R>
__global__ void __launch_bounds__(kThreads, mv::kMinBlocksPerSm)
    matvec_quant_kernel(float* out, int out_stride, const float* x, const uint8_t* w, size_t row_bytes, int in,
                        int out_features, int split, bool accumulate) {
  constexpr int kValues = kOutputs * R, N = mv::pow2_at_least(kValues);
  H2O_SHARED(float, partial, [kWarps][kValues]);
  const mv::WarpRows at(split, out_features);
  float sums[N] = {};  // [f * R + r], zero-padded to N
  if (at.live > 0)
    accumulate_pieces<F, R>(sums, x, w + size_t(at.first) * row_bytes, row_bytes, in, at.live, at.slice, split,
                            at.lane);
  const float total = mv::warp_reduce_scatter<N>(sums, at.lane);
  mv::write_outputs<R, N>(partial, total, at, split, out, out_stride, out_features, accumulate);
}

template <class F, int R = 1>
void launch_rows(int rows, float* out, int out_stride, const float* x, const uint8_t* w, size_t row_bytes, int in,
                 int out_features, bool accumulate, gpu::Stream stream) {
  if constexpr (R < kMatvecMaxRows) {
    if (rows != R)
      return launch_rows<F, R + 1>(rows, out, out_stride, x, w, row_bytes, in, out_features, accumulate, stream);
  }
  // A tile is one piece per lane of a warp.
  const int split = mv::split_for_tiles(out_features, (in / F::kPieceElems + 31) / 32);
  const int per_block = kOutputs * (kWarps / split);
  const dim3 grid(unsigned((out_features + per_block - 1) / per_block)), block(kThreads);
  H2O_LAUNCH(grid, block, stream, matvec_quant_kernel<F, R>)(out, out_stride, x, w, row_bytes, in, out_features,
                                                             split, accumulate);
}

}  // namespace

void matvec_quant(DType type, float* out, int out_stride, const float* x, const void* w, int rows, int in,
                  int out_features, bool accumulate, gpu::Stream stream) {
  if (rows <= 0 || out_features <= 0) return;
  if (rows > kMatvecMaxRows)
    throw Error("matvec_quant: " + std::to_string(rows) + " rows (at most " + std::to_string(kMatvecMaxRows) + ")");
  if (!is_block_format(type)) throw Error(std::string("matvec_quant: no kernel for ") + dtype_name(type) + " weights");
  // The 16-byte loads of x and of f16, Q4_K and Q5_K rows (what upload guarantees).
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || in % 16 != 0 || reinterpret_cast<uintptr_t>(w) % 16 != 0)
    throw Error("matvec_quant: inputs and weights must start on 16 bytes with rows of a multiple of 16 elements");
  const size_t row_bytes = h2o::row_bytes(type, in);
  H2O_WITH_BLOCK_FORMAT(type, F,
                        launch_rows<F>(rows, out, out_stride, x, static_cast<const uint8_t*>(w), row_bytes, in,
                                       out_features, accumulate, stream));
  gpu::check_launch("matvec_quant");
}

}  // namespace H2O_KERN_NS
