#pragma once
// The projections and the classifier: one matrix product per call over the
// rows of every session in the step, so each weight is read once per step.
//
// Which code multiplies (the same rule on the GPU and in the SIMT emulation):
//  - rows <= kMatvecMaxRows (8: decode steps of up to 8 sessions, forced
//    and classified rows of small steps): kern::matvec (matvec.cu). So few
//    rows make a product bound by reading the weights (each element joins at
//    most 8 multiply-adds). cuBLAS's GEMM tiles are shaped for many rows: with
//    cublasGemmEx for every projection a Llama-2-7B f16 decode step ran at a
//    quarter of the copy bandwidth. The kernel streams each weight once with
//    16-byte loads for all rows; plain f32 FMAs for every type (no TF32).
//  - more rows (prefill chunks): cublasGemmEx (blas_cublas.cpp), where the
//    arithmetic grows with the rows and tensor cores pay; in the emulation
//    the CPU backend's matmul stands in for it (kernels/simt/blas_emu.cpp).
// CudaTuning::matvec_rows lowers the bound (0: cuBLAS for all) to compare.
#include "core/model/dtype.h"
#include "kernels/device.h"
#include "kernels/launch.h"

namespace H2O_KERN_NS {

class Blas {
 public:
  // `matvec_rows`: the rule's bound (<= kMatvecMaxRows; less to compare, CudaTuning).
  Blas(gpu::Stream stream, int matvec_rows);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // out[r][o] (f32) = sum_i w[o][i] x[r][i] for r < rows, plus out[r][o]
  // itself when `accumulate` (the residual add, in the same pass). `w` is
  // row-major [out_features, in] and `x` row-major [rows, in], both of
  // `type`; the sums are f32 (no TF32, no reduced-precision reductions).
  void gemm(float* out, const void* x, const void* w, DType type, int rows, int in, int out_features, bool accumulate);

 private:
  gpu::Stream stream_;
  int matvec_rows_;
  void* handle_ = nullptr;
  void* workspace_ = nullptr;
};

}  // namespace H2O_KERN_NS
