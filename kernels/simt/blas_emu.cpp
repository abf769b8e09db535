// Blas's library half for the SIMT emulation (blas.cpp holds blas.h's rule,
// so up to kMatvecMaxRows rows the kernels themselves run through the
// emulation): the products of more rows on the CPU in place of cuBLAS,
// enqueued on the emulated stream (so that graph capture records them). There
// f32 weights (block formats arrive dequantised to f32 by dequantize.cu) go
// through the CPU backend's own product (cpu::project); f16 and bf16 are
// widened a row at a time and summed in f32.
#include <vector>

#include "core/base/thread_pool.h"
#include "core/cpu/cpu_ops.h"
#include "core/cpu/cpu_weights.h"
#include "kernels/blas.h"
#include "kernels/simt/simt.h"

namespace H2O_KERN_NS {

void Blas::open_library() {}
void Blas::close_library() {}

void Blas::library_gemm(float* out, int ldo, const void* x, const void* w, DType type, int rows, int in,
                        int out_features, bool accumulate) {
  simt::enqueue(stream_, [=] {
    static ThreadPool one(1);
    std::vector<float> xs(size_t(rows) * size_t(in)), product(size_t(rows) * size_t(out_features));
    convert_to_f32(x, type, xs.size(), xs.data());
    if (type == DType::F32) {
      cpu::ProjectScratch scratch;
      const cpu::Matrix m{w, DType::F32, out_features, in};
      cpu::project(product.data(), xs.data(), rows, m, one, scratch);
    } else {
      std::vector<float> row(static_cast<size_t>(in));
      for (int o = 0; o < out_features; ++o) {
        convert_to_f32(static_cast<const char*>(w) + size_t(o) * size_t(in) * 2, type, size_t(in), row.data());
        for (int r = 0; r < rows; ++r)
          product[size_t(r) * size_t(out_features) + size_t(o)] = cpu::dot(row.data(), &xs[size_t(r) * size_t(in)], in);
      }
    }
    for (int r = 0; r < rows; ++r)
      for (int o = 0; o < out_features; ++o) {
        float& dst = out[size_t(r) * size_t(ldo) + size_t(o)];
        const float p = product[size_t(r) * size_t(out_features) + size_t(o)];
        dst = accumulate ? dst + p : p;
      }
  });
}

}  // namespace H2O_KERN_NS
