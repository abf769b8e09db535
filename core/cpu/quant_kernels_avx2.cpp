// AVX2 (+FMA, F16C) row kernels. Compiled with -mavx2 -mfma -mf16c
// -mno-avx512f whatever the project's flags (so that -march=native on an
// AVX-512 machine cannot slip EVEX instructions in), and called only when the
// CPU reports AVX2, FMA and F16C (quant_matvec.cpp).
#include <immintrin.h>

#include <cstring>

#include "quant_kernels.h"
#include "quant_kernels_256.inc"

namespace h2o::cpu::kern {

Kernel avx2_kernel(QuantType t) {
  using namespace k256;
  switch (t) {
    case QuantType::F32: return k_f32;
    case QuantType::F16: return k_f16;
    case QuantType::BF16: return k_bf16;
    case QuantType::Q8_0: return k_q8_0;
    case QuantType::Q4_0: return k_legacy<4, false>;
    case QuantType::Q4_1: return k_legacy<4, true>;
    case QuantType::Q5_0: return k_legacy<5, false>;
    case QuantType::Q5_1: return k_legacy<5, true>;
    case QuantType::Q2_K: return k_q2_k;
    case QuantType::Q3_K: return k_q3_k;
    case QuantType::Q4_K: return k_q45_k<false>;
    case QuantType::Q5_K: return k_q45_k<true>;
    case QuantType::Q6_K: return k_q6_k;
  }
  return nullptr;
}

}  // namespace h2o::cpu::kern
