// Rows of a block-format matrix (quant_formats.cuh) widened to f32: the
// embedding rows of a step's tokens, and slabs of a matrix for the products
// of more than kMatvecMaxRows rows (Blas: dequantise, then cuBLAS in f32).
// One thread per piece, decoded by the same code as matvec_quant.cu's, so a
// value here is the value the kernel multiplies and the CPU dequantises.
#include <cstdint>
#include <string>

#include "core/model/quant.h"
#include "kernels/launch.h"
#include "kernels/portable.h"
#include "kernels/quant_formats.cuh"

namespace H2O_KERN_NS {
namespace {

// Block x: one output row; threads over its pieces.
template <class F>
__global__ void dequantize_kernel(const uint8_t* w, size_t row_bytes, int cols, const int* ids, int first, float* out,
                                  int out_stride) {
  const int row = int(blockIdx.x), pieces = cols / F::kPieceElems;
  const size_t from = ids ? size_t(ids[row]) : size_t(first) + size_t(row);
  const uint8_t* src = w + from * row_bytes;
  float* dst = out + size_t(row) * size_t(out_stride);
  for (int p = int(blockIdx.y * blockDim.x + threadIdx.x); p < pieces; p += int(gridDim.y * blockDim.x)) {
    const typename F::Raw raw = F::load(src, p);
    const typename F::Scales scale = F::scales(raw, p);
    H2O_UNROLL
    for (int word = 0; word < F::kWords; ++word) {
      float v[F::kGroups][4];
      F::decode(raw, scale, p, word, v);
      H2O_UNROLL
      for (int g = 0; g < F::kGroups; ++g) {
        float* at = dst + F::offset(p, word, g);
        H2O_UNROLL
        for (int k = 0; k < 4; ++k) at[k] = v[g][k];
      }
    }
  }
}

}  // namespace

void dequantize_rows(DType type, const void* w, int cols, const int* ids, int first, int rows, float* out,
                     int out_stride, int threads, gpu::Stream stream) {
  if (rows <= 0) return;
  if (!is_block_format(type)) throw Error(std::string("dequantize_rows: no kernel for ") + dtype_name(type));
  const size_t row_bytes = h2o::row_bytes(type, cols);
  H2O_WITH_BLOCK_FORMAT(type, F, {
    const int pieces = cols / F::kPieceElems;
    const dim3 grid(unsigned(rows), unsigned((pieces + threads - 1) / threads));
    H2O_LAUNCH(grid, dim3(unsigned(threads)), stream, dequantize_kernel<F>)(
        static_cast<const uint8_t*>(w), row_bytes, cols, ids, first, out, out_stride);
  });
  gpu::check_launch("dequantize_rows");
}

}  // namespace H2O_KERN_NS
