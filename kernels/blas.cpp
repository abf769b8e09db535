// Blas's rule (blas.h), the same on the GPU and in the SIMT emulation: which
// kernel multiplies each part of a matrix. Only the library's half differs
// between the two (library_gemm, open_library: blas_cublas.cpp,
// kernels/simt/blas_emu.cpp).
#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "core/model/quant.h"
#include "kernels/blas.h"
#include "kernels/weight_convert.h"

namespace H2O_KERN_NS {
namespace {
constexpr int kDequantThreads = 128;  // dequantize_rows' block size: one thread per piece of a row
}  // namespace

int DeviceMatrix::rows() const {
  int n = 0;
  for (int i = 0; i < parts; ++i) n += part[i].rows;
  return n;
}

int64_t DeviceMatrix::bytes() const {
  int64_t n = 0;
  for (int i = 0; i < parts; ++i) n += int64_t(part[i].rows) * int64_t(row_bytes(part[i].type, cols));
  return n;
}

size_t dequant_scratch_bytes(const DeviceMatrix& w) {
  size_t most = 0;
  for (int i = 0; i < w.parts; ++i)
    if (is_block_format(w.part[i].type)) most = std::max(most, size_t(w.part[i].rows) * size_t(w.cols) * 4);
  return std::min(most, kDequantSlabBytes);
}

Blas::Blas(gpu::Stream stream, int matvec_rows, size_t scratch_bytes, int int8_cols)
    : stream_(stream), matvec_rows_(matvec_rows), scratch_bytes_(scratch_bytes), int8_cols_(int8_cols) {
  open_library();
  if (scratch_bytes_ > 0) scratch_ = gpu::alloc(scratch_bytes_);
  if (int8_cols_ > 0)
    for (void*& set : int8_) set = gpu::alloc(int8_rows_bytes(kMatvecMaxRows, int8_cols_));
}

Blas::~Blas() {
  close_library();
  gpu::release(scratch_);
  for (void* set : int8_) gpu::release(set);
}

void Blas::gemm(float* out, const void* x, const void* w, DType type, int rows, int in, int out_features,
                bool accumulate) {
  part_gemm(out, out_features, x, type, {type, w, out_features}, in, rows, accumulate);
}

Int8Rows Blas::int8_input(const DeviceMatrix& w, DType x_type, int rows, int set) const {
  if (int8_cols_ == 0 || x_type != DType::F32 || rows <= 0 || rows > matvec_rows_) return {};
  bool any = false;
  for (int i = 0; i < w.parts; ++i) any |= has_int8_path(w.part[i].type);
  if (!any) return {};
  if (w.cols > int8_cols_ || w.cols % kInt8BlockElems != 0)
    throw Error("blas: 8-bit inputs of " + std::to_string(w.cols) + " columns (a bug; please report)");
  if (set != 0 && set != 1) throw Error("blas: 8-bit input set " + std::to_string(set) + " (a bug; please report)");
  return int8_rows_at(int8_[set], rows, w.cols);
}

void Blas::gemm(float* out, const void* x, DType x_type, const DeviceMatrix& w, int rows, bool accumulate,
                const Int8Rows& quantized) {
  // x in 8 bits once for every part that multiplies it so.
  Int8Rows codes = quantized;
  if (codes.in == 0) {
    codes = int8_input(w, x_type, rows);
    if (codes.in != 0) quantize_int8(static_cast<const float*>(x), rows, w.cols, codes, stream_);
  } else if (codes.in != w.cols) {
    throw Error("blas: 8-bit rows of " + std::to_string(codes.in) + " for a product of " + std::to_string(w.cols) +
                " columns (a bug; please report)");
  }
  const int ldo = w.rows();
  for (int i = 0, first = 0; i < w.parts; first += w.part[i].rows, ++i)
    part_gemm(out + first, ldo, x, x_type, w.part[i], w.cols, rows, accumulate, codes.in != 0 ? &codes : nullptr);
}

void Blas::part_gemm(float* out, int ldo, const void* x, DType x_type, const MatrixPart& w, int in, int rows,
                     bool accumulate, const Int8Rows* codes) {
  if (rows == 0 || w.rows == 0) return;
  if (w.type == x_type) {
    if (rows > matvec_rows_) return library_gemm(out, ldo, x, w.data, w.type, rows, in, w.rows, accumulate);
    if (ldo != w.rows) throw Error("blas: a float part of a matrix of several parts (a bug; please report)");
    return matvec(w.type, out, x, w.data, rows, in, w.rows, accumulate, stream_);
  }
  if (x_type != DType::F32 || !is_block_format(w.type))
    throw Error(std::string("blas: ") + dtype_name(w.type) + " weights with " + dtype_name(x_type) +
                " inputs (a bug; please report)");
  const auto* xf = static_cast<const float*>(x);
  if (rows <= matvec_rows_) {
    if (codes && has_int8_path(w.type))
      return matvec_int8(w.type, out, ldo, *codes, w.data, rows, w.rows, accumulate, stream_);
    return matvec_quant(w.type, out, ldo, xf, w.data, rows, in, w.rows, accumulate, stream_);
  }
  // Many rows: slabs of the weights widened to f32, each multiplied by the library.
  const int slab = int(std::min<size_t>(size_t(w.rows), scratch_bytes_ / (size_t(in) * 4)));
  if (slab < 1) throw Error("blas: no scratch for block-format weights (a bug; please report)");
  for (int first = 0; first < w.rows; first += slab) {
    const int n = std::min(slab, w.rows - first);
    dequantize_rows(w.type, w.data, in, nullptr, first, n, static_cast<float*>(scratch_), in, kDequantThreads, stream_);
    library_gemm(out + first, ldo, x, scratch_, DType::F32, rows, in, n, accumulate);
  }
}

}  // namespace H2O_KERN_NS
