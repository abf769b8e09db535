// Blas's library half on the GPU (blas.cpp holds the rule): cublasGemmEx
// with f32 accumulation for the products of more than matvec_rows rows. The
// weights are row-major [out, in], which cuBLAS (column-major) sees as [in,
// out]; so out^T = W^T^T x^T is a transposed-A product. A fixed workspace is set so that the
// calls can be captured into a CUDA graph.
#include <cublas_v2.h>

#include <string>

#include "kernels/blas.h"

namespace h2o::kern {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(gpu::device_label() + ": " + call + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: break;  // always a float type: block formats arrive widened to f32 (blas.cpp)
  }
  return CUDA_R_32F;
}

}  // namespace

void Blas::open_library() {
  cublasHandle_t h = nullptr;
  check(cublasCreate(&h), "cublasCreate");
  handle_ = h;
  // No TF32: f32 inputs are multiplied as f32 (see library_gemm for the compute type).
  check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  check(cublasSetStream(h, reinterpret_cast<cudaStream_t>(stream_)), "cublasSetStream");
  workspace_ = gpu::alloc(kWorkspaceBytes);
  check(cublasSetWorkspace(h, workspace_, kWorkspaceBytes), "cublasSetWorkspace");
}

void Blas::close_library() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
  gpu::release(workspace_);
}

void Blas::library_gemm(float* out, int ldo, const void* x, const void* w, DType type, int rows, int in,
                        int out_features, bool accumulate) {
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  const cudaDataType_t t = cuda_type(type);
  // f32 weights: pedantic f32 (no TF32, no reduced-precision steps), as the
  // f32 path must reproduce the float64 references' greedy tokens. f16/bf16:
  // tensor cores with f32 accumulation.
  const cublasComputeType_t compute = type == DType::F32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  // Column-major: C[out_features x rows] (leading dimension ldo) = A^T[out_features x in] * B[in x rows].
  check(cublasGemmEx(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, out_features, rows, in, &alpha, w,
                     t, in, x, t, in, &beta, out, CUDA_R_32F, ldo, compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

}  // namespace h2o::kern
