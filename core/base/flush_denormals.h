#pragma once
// While alive, the calling thread treats denormal floats as zero (x86: the
// MXCSR flags FTZ and DAZ), and its previous mode comes back afterwards.
//
// Why: on x86 an operation with a denormal operand or result takes a microcode
// assist costing ~100 cycles. Activations and products that small occur in a
// forward pass (random and trained weights alike), and made the CPU decode
// ~20 % slower than llama2.c's run.c, which gets the same flags from -Ofast.
// Values below 1.2e-38 cannot change a logit that matters.
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace h2o {

class FlushDenormals {
 public:
#if defined(__SSE__) || defined(__x86_64__)
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero); }
  ~FlushDenormals() { _mm_setcsr(saved_); }

 private:
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  unsigned saved_;
#else
  FlushDenormals() = default;
#endif
 public:
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;
};

}  // namespace h2o
