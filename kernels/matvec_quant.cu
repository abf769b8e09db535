// Matrix-vector products for 1..8 rows with the weights in a block format
// (`--precision native`: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K as the file stores them,
// or f16): decode steps of quantised models. Built as matvec.cu is
// (matvec_common.cuh: kOutputs weight rows per warp, the same split rule,
// reduce-scatter and block epilogue); what differs is the weights:
//  - each lane takes one piece (32 elements, 16 for f16) of each of its warp's
//    kOutputs rows per iteration, consecutive lanes on consecutive pieces, so
//    a warp reads one stretch of each row; the kOutputs pieces' loads are all
//    issued before any is used (16-byte loads for Q4_K, Q5_K, f16; aligned
//    4-byte words for the 2-byte aligned Q8_0, Q4_0, Q6_K: quant_formats.cuh).
// Two kinds of input, one kernel:
//  - f32 x (matvec_quant, the exact path): the piece is dequantised in
//    registers, word by word, by the functions the CPU's dequantisation calls
//    (core/model/quant_blocks.h): every weight is the value the CPU holds, and
//    only the sums differ from a float32 matmul of the dequantised matrix, by
//    the order of f32 additions. x in 16-byte loads of 4 inputs, L1/L2-resident,
//    each load serving the kOutputs rows.
//  - 8-bit x (matvec_int8, int8_activations.h): the piece's integer codes
//    against x's two terms' codes, four at a time (__dp4a), and per group of
//    16 or 32 elements a few multiplies by the weight's scale and x's, less
//    the weight's offset times x's f32 sum. No float per element: the
//    instructions a byte of weights costs drop several-fold.
// A sum depends on the shape alone (the split), not on the other rows of the
// call or the device.
#include <cstdint>
#include <string>

#include "core/model/quant.h"
#include "kernels/int8_activations.h"
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

// f32 inputs: x [rows][in].
struct F32Input {
  const float* x;
  int in;
};

// This warp's share of `live` (<= kOutputs) weight rows starting at `w`
// (`row_bytes` apart), for R rows of x: sums[f * R + r] += w[f][i] x[r][i]
// over the pieces slice * 32 + lane, then split * 32 further, ... Every row's
// loads of a piece are issued first, so they are in flight together; a missing
// row re-reads row 0 (its sums are not written).
template <class F>
struct PieceLoads {
  typename F::Raw raw[kOutputs];
  typename F::Scales scale[kOutputs];
  __device__ PieceLoads(const uint8_t* w, size_t row_bytes, int live, int p) {
    H2O_UNROLL
    for (int f = 0; f < kOutputs; ++f) raw[f] = F::load(w + size_t(f < live ? f : 0) * row_bytes, p);
    H2O_UNROLL
    for (int f = 0; f < kOutputs; ++f) scale[f] = F::scales(raw[f], p);
  }
};

template <class F, int R, int N>
__device__ __forceinline__ void accumulate_pieces(float (&sums)[N], const F32Input& in, const uint8_t* w,
                                                  size_t row_bytes, int live, int slice, int split, int lane) {
  const int pieces = in.in / F::kPieceElems;
  for (int p = slice * 32 + lane; p < pieces; p += split * 32) {
    const PieceLoads<F> piece(w, row_bytes, live, p);
    H2O_UNROLL
    for (int word = 0; word < F::kWords; ++word)
      H2O_UNROLL
      for (int g = 0; g < F::kGroups; ++g) {
        float v[kOutputs][F::kGroups][4];  // the other group's values are dead code, dropped by the compiler
        H2O_UNROLL
        for (int f = 0; f < kOutputs; ++f) F::decode(piece.raw[f], piece.scale[f], p, word, v[f]);
        const int e = F::offset(p, word, g);
        H2O_UNROLL
        for (int r = 0; r < R; ++r) {
          float xv[4];
          load_x4(in.x + size_t(r) * size_t(in.in) + size_t(e), xv);
          H2O_UNROLL
          for (int f = 0; f < kOutputs; ++f)
            H2O_UNROLL
            for (int k = 0; k < 4; ++k) sums[f * R + r] += v[f][g][k] * xv[k];
        }
      }
  }
}

// The same with 8-bit x: per group g of a piece (kWords words under one
// scale, in one half block of x), the dot products of the codes with x's two
// terms, then a (d0 dot0 + d1 dot1) - b sum(x) (int8_activations.h).
template <class F, int R, int N>
__device__ __forceinline__ void accumulate_pieces(float (&sums)[N], const Int8Rows& in, const uint8_t* w,
                                                  size_t row_bytes, int live, int slice, int split, int lane) {
  const int pieces = in.in / F::kPieceElems, blocks_per_row = in.in / kInt8BlockElems;
  for (int p = slice * 32 + lane; p < pieces; p += split * 32) {
    const PieceLoads<F> piece(w, row_bytes, live, p);
    H2O_UNROLL
    for (int g = 0; g < F::kGroups; ++g) {
      float a[kOutputs], b[kOutputs];
      H2O_UNROLL
      for (int f = 0; f < kOutputs; ++f) F::linear(piece.scale[f], g, a[f], b[f]);
      const int e = F::offset(p, 0, g);
      H2O_UNROLL
      for (int r = 0; r < R; ++r) {
        uint32_t xq[2][F::kWords];  // the two terms' codes
        H2O_UNROLL
        for (int t = 0; t < 2; ++t) {
          const uint4* codes = reinterpret_cast<const uint4*>(in.codes[t] + size_t(r) * size_t(in.in) + size_t(e));
          H2O_UNROLL
          for (int i = 0; i < F::kWords / 4; ++i) {
            const uint4 u = __ldg(codes + i);
            xq[t][4 * i] = u.x, xq[t][4 * i + 1] = u.y, xq[t][4 * i + 2] = u.z, xq[t][4 * i + 3] = u.w;
          }
        }
        // d0, d1, and the sum of the half block this group lies in.
        const uint4 block = __ldg(reinterpret_cast<const uint4*>(in.blocks + size_t(r) * blocks_per_row + e / kInt8BlockElems));
        const float d0 = __uint_as_float(block.x), d1 = __uint_as_float(block.y);
        const float sx = __uint_as_float((e / 16) % 2 == 0 ? block.z : block.w);
        H2O_UNROLL
        for (int f = 0; f < kOutputs; ++f) {
          int dot0 = 0, dot1 = 0;
          H2O_UNROLL
          for (int word = 0; word < F::kWords; ++word) {
            const int q = int(F::codes(piece.raw[f], p, word, g));
            dot0 = __dp4a(q, int(xq[0][word]), dot0);
            dot1 = __dp4a(q, int(xq[1][word]), dot1);
          }
          sums[f * R + r] += a[f] * (d0 * float(dot0) + d1 * float(dot1));
          if constexpr (F::kOffset) sums[f * R + r] -= b[f] * sx;
        }
      }
    }
  }
}

// Blocks per SM the registers must allow: mv::kMinBlocksPerSm (at most 128
// registers a thread) up to 2 rows. Past that the R rows' sums and inputs
// spilled (nvcc 13, sm_90: up to 204 bytes at 128 registers, 36 at 168), so
// 3 blocks (168 registers) up to 5 rows and 2 (255) beyond: 8 warps an SM,
// each lane with 4 rows' pieces (64-128 bytes) in flight.
constexpr int min_blocks_per_sm(int rows) { return rows <= 2 ? mv::kMinBlocksPerSm : rows <= 5 ? 3 : 2; }

template <class F, class X, int R>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm(R))
    matvec_quant_kernel(float* out, int out_stride, X x, const uint8_t* w, size_t row_bytes, int out_features,
                        int split, bool accumulate) {
  constexpr int kValues = kOutputs * R, N = mv::pow2_at_least(kValues);
  H2O_SHARED(float, partial, [kWarps][kValues]);
  const mv::WarpRows at(split, out_features);
  float sums[N] = {};  // [f * R + r], zero-padded to N
  if (at.live > 0)
    accumulate_pieces<F, R>(sums, x, w + size_t(at.first) * row_bytes, row_bytes, at.live, at.slice, split, at.lane);
  const float total = mv::warp_reduce_scatter<N>(sums, at.lane);
  mv::write_outputs<R, N>(partial, total, at, split, out, out_stride, out_features, accumulate);
}

template <class F, class X, int R = 1>
void launch_rows(int rows, float* out, int out_stride, const X& x, const uint8_t* w, size_t row_bytes,
                 int out_features, bool accumulate, gpu::Stream stream) {
  if constexpr (R < kMatvecMaxRows) {
    if (rows != R)
      return launch_rows<F, X, R + 1>(rows, out, out_stride, x, w, row_bytes, out_features, accumulate, stream);
  }
  // A tile is one piece per lane of a warp.
  const int split = mv::split_for_tiles(out_features, (x.in / F::kPieceElems + 31) / 32);
  const int per_block = kOutputs * (kWarps / split);
  const dim3 grid(unsigned((out_features + per_block - 1) / per_block)), block(kThreads);
  H2O_LAUNCH(grid, block, stream, matvec_quant_kernel<F, X, R>)(out, out_stride, x, w, row_bytes, out_features, split,
                                                                accumulate);
}

void check_shape(const char* what, int rows, int in, const void* x, const void* w) {
  if (rows > kMatvecMaxRows)
    throw Error(std::string(what) + ": " + std::to_string(rows) + " rows (at most " + std::to_string(kMatvecMaxRows) + ")");
  // The 16-byte loads of x and of f16, Q4_K and Q5_K rows (what upload guarantees).
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || in % 16 != 0 || reinterpret_cast<uintptr_t>(w) % 16 != 0)
    throw Error(std::string(what) + ": inputs and weights must start on 16 bytes with rows of a multiple of 16 elements");
}

}  // namespace

void matvec_quant(DType type, float* out, int out_stride, const float* x, const void* w, int rows, int in,
                  int out_features, bool accumulate, gpu::Stream stream) {
  if (rows <= 0 || out_features <= 0) return;
  if (!is_block_format(type)) throw Error(std::string("matvec_quant: no kernel for ") + dtype_name(type) + " weights");
  check_shape("matvec_quant", rows, in, x, w);
  const size_t row_bytes = h2o::row_bytes(type, in);
  H2O_WITH_BLOCK_FORMAT(type, F,
                        launch_rows<F>(rows, out, out_stride, F32Input{x, in}, static_cast<const uint8_t*>(w),
                                       row_bytes, out_features, accumulate, stream));
  gpu::check_launch("matvec_quant");
}

void matvec_int8(DType type, float* out, int out_stride, const Int8Rows& x, const void* w, int rows,
                 int out_features, bool accumulate, gpu::Stream stream) {
  if (rows <= 0 || out_features <= 0) return;
  if (!has_int8_path(type)) throw Error(std::string("matvec_int8: no kernel for ") + dtype_name(type) + " weights");
  check_shape("matvec_int8", rows, x.in, x.codes[0], w);
  const size_t row_bytes = h2o::row_bytes(type, x.in);
  H2O_WITH_BLOCK_FORMAT(type, F, if constexpr (F::kInt8) {
    launch_rows<F>(rows, out, out_stride, x, static_cast<const uint8_t*>(w), row_bytes, out_features, accumulate,
                   stream);
  });
  gpu::check_launch("matvec_int8");
}

}  // namespace H2O_KERN_NS
