// Blas for the SIMT emulation, by blas.h's rule: up to kMatvecMaxRows rows
// the matvec kernel itself (matvec.cu through the emulation, so CI runs it),
// more rows on the CPU in place of cuBLAS, enqueued on the emulated stream
// (so that graph capture records them). There f32 weights go through the CPU
// backend's own matmul; f16 and bf16 are widened a row at a time and summed
// in f32.
#include <vector>

#include "core/base/thread_pool.h"
#include "core/cpu/cpu_ops.h"
#include "kernels/blas.h"
#include "kernels/simt/simt.h"

namespace H2O_KERN_NS {

Blas::Blas(gpu::Stream stream, int matvec_rows) : stream_(stream), matvec_rows_(matvec_rows) {}
Blas::~Blas() = default;

void Blas::gemm(float* out, const void* x, const void* w, DType type, int rows, int in, int out_features,
                bool accumulate) {
  if (rows == 0) return;
  if (rows <= matvec_rows_) return matvec(type, out, x, w, rows, in, out_features, accumulate, stream_);
  simt::enqueue(stream_, [=] {
    static ThreadPool one(1);
    std::vector<float> xs(size_t(rows) * size_t(in)), product(size_t(rows) * size_t(out_features));
    convert_to_f32(x, type, xs.size(), xs.data());
    if (type == DType::F32) {
      cpu::matmul(product.data(), xs.data(), static_cast<const float*>(w), rows, in, out_features, one);
    } else {
      std::vector<float> row(static_cast<size_t>(in));
      for (int o = 0; o < out_features; ++o) {
        convert_to_f32(static_cast<const char*>(w) + size_t(o) * size_t(in) * 2, type, size_t(in), row.data());
        for (int r = 0; r < rows; ++r)
          product[size_t(r) * size_t(out_features) + size_t(o)] = cpu::dot(row.data(), &xs[size_t(r) * size_t(in)], in);
      }
    }
    for (size_t e = 0; e < product.size(); ++e) out[e] = accumulate ? out[e] + product[e] : product[e];
  });
}

}  // namespace H2O_KERN_NS
