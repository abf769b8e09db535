#pragma once
// One block of 32 f32 inputs to its 8-bit terms (int8_activations.h), for the
// kernels that quantise: quantize_int8.cu on its own, and those that write a
// projection's input right after their output (the norms rmsnorm.cu,
// layernorm.cu; the activations swiglu.cu, gelu.cu; attention_combine.cuh), so
// the product finds its 8-bit input without a launch of its own. Plain loads,
// not __ldg: they read back what their own block or thread has just written.
#include "kernels/int8_activations.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {

// Block k of row r: the 32 floats at `src` to out's codes and blocks.
__device__ __forceinline__ void quantize_int8_at(const float* src, const Int8Rows& out, int r, int k) {
  const size_t at = size_t(r) * size_t(out.in) + size_t(k) * kInt8BlockElems;
  Int8Block block;
  quantize_int8_block(src, reinterpret_cast<uint32_t*>(out.codes[0] + at), reinterpret_cast<uint32_t*>(out.codes[1] + at),
                      block);
  out.blocks[size_t(r) * size_t(out.in / kInt8BlockElems) + size_t(k)] = block;
}

// Blocks [first, first + count) of row r, their f32 values at `span` (block
// `first`'s), by a block's threads after a barrier: what each thread wrote of
// the span is then visible to all. A norm quantises its whole row; the
// attention's combine one head's channels (attention_combine.cuh).
template <class T>
__device__ __forceinline__ void quantize_span_int8(const T* span, const Int8Rows& out, int r, int first, int count) {
  if constexpr (sizeof(T) == sizeof(float)) {  // 8-bit inputs come from f32 rows only (storage f32)
    if (out.in == 0) return;
    __syncthreads();
    for (int k = int(threadIdx.x); k < count; k += int(blockDim.x))
      quantize_int8_at(reinterpret_cast<const float*>(span) + size_t(k) * kInt8BlockElems, out, r, first + k);
  }
}

// The whole row r of `dim` values at `row` (rmsnorm.cu, layernorm.cu).
template <class T>
__device__ __forceinline__ void quantize_row_int8(const T* row, const Int8Rows& out, int r, int dim) {
  quantize_span_int8(row, out, r, 0, dim / kInt8BlockElems);
}

// An elementwise kernel's output where the next product takes 8-bit inputs:
// rows of `width` f32 values out[r][i] = value(r, i), a thread (of the whole
// grid, striding) per block of 32, each writing its 32 values and then their
// codes (swiglu.cu, gelu.cu).
template <class Value>
__device__ __forceinline__ void write_rows_int8(float* out, int rows, int width, const Int8Rows& int8, Value value) {
  const size_t per_row = size_t(width) / kInt8BlockElems, stride = size_t(gridDim.x) * blockDim.x;
  for (size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x; b < size_t(rows) * per_row; b += stride) {
    const int r = int(b / per_row), k = int(b % per_row);
    float* o = out + size_t(r) * size_t(width) + size_t(k) * kInt8BlockElems;
    for (int i = 0; i < kInt8BlockElems; ++i) o[i] = value(r, k * kInt8BlockElems + i);
    quantize_int8_at(o, int8, r, k);
  }
}

}  // namespace H2O_KERN_NS
