#pragma once
// The projections and the classifier: one matrix product per call over the
// rows of every session in the step, so each weight is read once per step.
//
// Which code multiplies (the same rule on the GPU and in the SIMT emulation):
//  - rows <= kMatvecMaxRows (8: decode steps of up to 8 sessions, forced
//    and classified rows of small steps): kern::matvec (matvec.cu) for
//    f32/f16/bf16 weights and inputs of that type; for weights in a block
//    format (`--precision native`) and f32 inputs, kern::matvec_int8 where the
//    Blas was made with int8_cols (x quantised to 8 bits once per product,
//    quantize_int8.cu; not f16 parts) and kern::matvec_quant (exact: f32 x)
//    otherwise (matvec_quant.cu). So few rows make a product bound by reading the
//    weights (each element joins at most 8 multiply-adds). cuBLAS's GEMM
//    tiles are shaped for many rows: with cublasGemmEx for every projection a
//    Llama-2-7B f16 decode step ran at a quarter of the copy bandwidth. The
//    kernels stream each weight once for all rows; plain f32 FMAs (no TF32).
//  - more rows (prefill chunks): cublasGemmEx (blas_cublas.cpp), where the
//    arithmetic grows with the rows and tensor cores pay; block formats are
//    first widened to f32 a slab of rows at a time (dequantize.cu, into a
//    scratch of at most kDequantSlabBytes) and multiplied in pedantic f32, so
//    a prefill sees the values a decode step multiplies. In the emulation the
//    CPU backend's matmul stands in for cuBLAS (kernels/simt/blas_emu.cpp).
// CudaTuning::matvec_rows lowers the bound (0: cuBLAS for all) to compare.
#include <cstddef>
#include <cstdint>

#include "core/model/dtype.h"
#include "kernels/device.h"
#include "kernels/int8_activations.h"
#include "kernels/launch.h"

namespace H2O_KERN_NS {

// Rows of a matrix in one device type, row_bytes(type, cols) apart.
struct MatrixPart {
  DType type = DType::F32;
  const void* data = nullptr;
  int rows = 0;
};

// A weight matrix [rows, cols] as the device holds it: runs of rows, each in
// one type. At native precision a fused Q|K|V of a Q4_K_M file is Q4_K rows
// (q, k) then Q6_K rows (v) in some layers: two parts, two products into the
// columns of one output.
struct DeviceMatrix {
  static constexpr int kMaxParts = 3;
  MatrixPart part[kMaxParts];
  int parts = 0;
  int cols = 0;

  int rows() const;
  int64_t bytes() const;  // what one product reads
};

// The most bytes of f32 a block-format product of many rows widens at once.
constexpr size_t kDequantSlabBytes = size_t(32) << 20;

class Blas {
 public:
  // `matvec_rows`: the rule's bound (<= kMatvecMaxRows; less to compare,
  // CudaTuning). `scratch_bytes`: the slab scratch for products of more rows
  // with block-format weights (the largest dequant_scratch_bytes of the model's matrices; 0: none).
  // `int8_cols`: the longest row of a block-format matrix whose products of
  // few rows take 8-bit inputs (0: none, f32 inputs for all).
  Blas(gpu::Stream stream, int matvec_rows, size_t scratch_bytes = 0, int int8_cols = 0);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // out[r][o] (f32) = sum_i w[o][i] x[r][i] for r < rows, plus out[r][o]
  // itself when `accumulate` (the residual add, in the same pass). `w` is
  // row-major [out_features, in] and `x` row-major [rows, in], both of
  // `type`; the sums are f32 (no TF32, no reduced-precision reductions).
  void gemm(float* out, const void* x, const void* w, DType type, int rows, int in, int out_features, bool accumulate);
  // The same over a DeviceMatrix, x [rows, w.cols] of `x_type`: a part of
  // x_type's own type multiplies as above, a block-format part (x f32) by
  // matvec_quant or dequantised slabs.
  // `quantized`: x's 8-bit rows where its producer wrote them (int8_input);
  // empty: gemm quantises x itself into the first set where w takes 8 bits.
  void gemm(float* out, const void* x, DType x_type, const DeviceMatrix& w, int rows, bool accumulate,
            const Int8Rows& quantized = {});
  // Where a product of `w` over `rows` rows of x_type takes x in 8 bits
  // (int8_activations.h), the rows of set `set` (0 or 1) for it; in == 0
  // where it takes x as it is. A producer that writes them (a norm, an
  // activation, the attention's combine) spares gemm its quantize_int8
  // launch. A set holds until the next product quantised into it: set 1 is
  // for a producer whose product waits while another 8-bit product runs
  // (GPT-NeoX's parallel residual: the second norm's rows wait for the FFN
  // while the output projection takes the attention's).
  Int8Rows int8_input(const DeviceMatrix& w, DType x_type, int rows, int set = 0) const;

 private:
  // out[r * ldo + o] over one part of `in` columns; `codes`: x in 8 bits, or null.
  void part_gemm(float* out, int ldo, const void* x, DType x_type, const MatrixPart& w, int in, int rows,
                 bool accumulate, const Int8Rows* codes = nullptr);
  // The library's handle and workspace (blas_cublas.cpp; nothing in the emulation).
  void open_library();
  void close_library();
  // cuBLAS (the CPU matmul in the emulation): w and x both of `type`, out[r * ldo + o].
  void library_gemm(float* out, int ldo, const void* x, const void* w, DType type, int rows, int in, int out_features,
                    bool accumulate);

  gpu::Stream stream_;
  int matvec_rows_;
  void* handle_ = nullptr;
  void* workspace_ = nullptr;
  void* scratch_ = nullptr;  // dequantised slabs
  size_t scratch_bytes_ = 0;
  int int8_cols_ = 0;
  void* int8_[2] = {};  // two sets of a product's x in 8 bits: int8_rows_bytes(kMatvecMaxRows, int8_cols_) each
};

// The slab scratch `w` needs for products of many rows: its largest
// block-format part widened to f32, at most kDequantSlabBytes; 0 if none.
size_t dequant_scratch_bytes(const DeviceMatrix& w);

}  // namespace H2O_KERN_NS
