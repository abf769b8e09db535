#pragma once
// The projections and the classifier: one matrix product per call over the
// rows of every session in the step, so each weight is read once per step.
// cuBLAS on the GPU (blas_cublas.cpp); the CPU backend's matmul in the SIMT
// emulation (tests/simt/blas_emu.cpp).
#include "core/model/dtype.h"
#include "kernels/device.h"

namespace h2o::kern {

class Blas {
 public:
  explicit Blas(gpu::Stream stream);
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
  void* handle_ = nullptr;
  void* workspace_ = nullptr;
};

}  // namespace h2o::kern
