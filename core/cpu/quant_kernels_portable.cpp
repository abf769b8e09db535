// Portable C++ row kernels: the reference every SIMD path is tested against,
// and the path taken on CPUs without AVX2. Integer sums per block are exact;
// float rounding happens only where the SIMD paths also round (scales times
// block sums), so those paths agree with these up to summation order.
#include <cstring>
#include <type_traits>

#include "core/cpu/cpu_ops.h"
#include "core/model/dtype.h"
#include "core/cpu/quant_kernels.h"
#include "core/cpu/quant_rows.h"

namespace h2o::cpu::kern {
namespace {

inline float h16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// ---- float32 activations -------------------------------------------------------

// cpu::dot, vectorised by the compiler for whatever this build targets: the
// float32 path of CPUs without AVX2 runs as fast as the attention's dots.
void k_f32(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    return dot(reinterpret_cast<const float*>(r), x.f + t * x.cols, int(x.cols));
  });
}

template <bool kBf16>
void k_half(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    const float* xr = x.f + t * x.cols;
    float s = 0;
    for (int64_t i = 0; i < x.cols; ++i) {
      uint16_t h;
      std::memcpy(&h, r + 2 * i, 2);
      s += (kBf16 ? bf16_to_f32(h) : f16_to_f32(h)) * xr[i];
    }
    return s;
  });
}
constexpr Kernel k_f16 = k_half<false>;
constexpr Kernel k_bf16 = k_half<true>;

// ---- Q8x32 activations ------------------------------------------------------------
// Per block b: dot = dw * dx * I + correction, I = sum q_w * q_x (unsigned
// weight codes for the 4/5-bit types); correction = -offset * dw * s (Q4_0:
// offset 8, Q5_0: 16) or + m * s (Q4_1, Q5_1), with s = dx * sum q_x.

// Element i of a Q4_0/Q4_1 nibble array (i < 32): low nibbles first.
inline int nibble(const uint8_t* qs, int i) { return i < 16 ? qs[i] & 0x0F : qs[i - 16] >> 4; }
inline uint32_t u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// kBits 4 or 5; kMin: the block has a min (Q4_1/Q5_1) instead of an offset.
template <int kBits, bool kMin>
void k_legacy(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  constexpr size_t kBytes = kBits == 4 ? (kMin ? 20 : 18) : (kMin ? 24 : 22);
  constexpr int kQs = (kMin ? 4 : 2) + (kBits == 5 ? 4 : 0);  // offset of the nibbles
  constexpr float kOffset = kBits == 4 ? 8.0f : 16.0f;
  const int64_t nb = x.cols / 32;
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    const int8_t* xq = x.q + t * x.cols;
    const float* xd = x.d + t * nb;
    const float* xs = x.s + t * nb;
    float sum = 0, corr = 0;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = r + b * kBytes;
      const uint32_t qh = kBits == 5 ? u32(p + (kMin ? 4 : 2)) : 0;
      int isum = 0;
      for (int i = 0; i < 32; ++i) isum += (nibble(p + kQs, i) | int((qh >> i) & 1) << 4) * xq[32 * b + i];
      const float dw = h16(p);
      sum += dw * xd[b] * float(isum);
      corr += (kMin ? h16(p + 2) : dw) * xs[b];
    }
    return kMin ? sum + corr : sum - kOffset * corr;
  });
}

// ---- Q16 activations -----------------------------------------------------------------
// Integer sums in int64 here (the SIMD paths keep int32 lanes of at most 16
// products each, and convert those to float).

void k_q8_0(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 32;
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    const int16_t* xq = x.q16 + t * x.cols;
    const float* xd = x.d + t * nb;
    float sum = 0;
    for (int64_t b = 0; b < nb; ++b) {
      const auto* blk = reinterpret_cast<const BlockQ8_0*>(r + b * sizeof(BlockQ8_0));
      int64_t isum = 0;
      for (int i = 0; i < 32; ++i) isum += blk->qs[i] * xq[32 * b + i];
      sum += h16(r + b * sizeof(BlockQ8_0)) * xd[b] * float(isum);
    }
    return sum;
  });
}

// Per super-block: dot = dw * dx * I - dmin * dx * M, with I the integer sum of
// sub-block scale times sub-block dot and M the sum of sub-block min times the
// activation sum over that sub-block. kQ5: Q5_K's fifth bit.
template <bool kQ5>
void k_q45_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    float sum = 0, corr = 0;
    for (int64_t b = 0; b < nb; ++b) {
      const auto* blk = reinterpret_cast<const Block*>(r + b * sizeof(Block));
      const int16_t* xq = x.q16 + t * x.cols + 256 * b;
      const int32_t* bs = x.sum32 + (t * x.cols + 256 * b) / 32;
      int64_t isum = 0, msum = 0;
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k4_scale_min(blk->scales, j, &sc, &m);
        const uint8_t* q = blk->qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        int64_t s = 0;
        for (int p = 0; p < 32; ++p) {
          int code = (q[p] >> shift) & 0x0F;
          if constexpr (kQ5) code |= ((blk->qh[p] >> j) & 1) << 4;
          s += code * xq[32 * j + p];
        }
        isum += sc * s;
        msum += m * int64_t(bs[j]);
      }
      const float dx = x.d[(t * x.cols) / 256 + b];
      sum += h16(r + b * sizeof(Block)) * dx * float(isum);
      corr += h16(r + b * sizeof(Block) + 2) * dx * float(msum);
    }
    return sum - corr;
  });
}

void k_q6_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    float sum = 0;
    for (int64_t b = 0; b < nb; ++b) {
      const auto* blk = reinterpret_cast<const BlockQ6_K*>(r + b * sizeof(BlockQ6_K));
      const int16_t* xq = x.q16 + t * x.cols + 256 * b;
      int64_t isum = 0;
      for (int k = 0; k < 16; ++k) {  // sub-block of 16
        int64_t s = 0;
        for (int e = 16 * k; e < 16 * k + 16; ++e) s += (q6k_code(*blk, e) - 32) * xq[e];
        isum += blk->scales[k] * s;
      }
      sum += h16(r + b * sizeof(BlockQ6_K) + 208) * x.d[(t * x.cols) / 256 + b] * float(isum);
    }
    return sum;
  });
}

// ---- Q8x256 activations (K-quants) ---------------------------------------------------
// Per super-block: dot = dw * dx * I - dmin * dx * M, with I the integer sum of
// sub-block scale times sub-block dot and M the sum of sub-block min times the
// activation sum over that sub-block.

void k_q2_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    float sum = 0, corr = 0;
    for (int64_t b = 0; b < nb; ++b) {
      const auto* blk = reinterpret_cast<const BlockQ2_K*>(r + b * sizeof(BlockQ2_K));
      const int8_t* xq = x.q + t * x.cols + 256 * b;
      const int16_t* bs = x.bsum16 + (t * x.cols + 256 * b) / 16;
      int isum = 0, msum = 0;
      for (int k = 0; k < 16; ++k) {
        int s = 0;
        for (int e = 16 * k; e < 16 * k + 16; ++e)
          s += ((blk->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) * xq[e];
        isum += (blk->scales[k] & 0x0F) * s;
        msum += (blk->scales[k] >> 4) * bs[k];
      }
      const float dx = x.d[(t * x.cols) / 256 + b];
      sum += h16(r + b * sizeof(BlockQ2_K) + 80) * dx * float(isum);
      corr += h16(r + b * sizeof(BlockQ2_K) + 82) * dx * float(msum);
    }
    return sum - corr;
  });
}

void k_q3_k(const uint8_t* w, size_t rb, int64_t rows, const Acts& x, float* out, int64_t os) {
  const int64_t nb = x.cols / 256;
  rows_loop(w, rb, rows, x, out, os, [&](const uint8_t* r, int t) {
    float sum = 0;
    for (int64_t b = 0; b < nb; ++b) {
      const auto* blk = reinterpret_cast<const BlockQ3_K*>(r + b * sizeof(BlockQ3_K));
      const int8_t* xq = x.q + t * x.cols + 256 * b;
      int isum = 0;
      for (int k = 0; k < 16; ++k) {
        int s = 0;
        for (int e = 16 * k; e < 16 * k + 16; ++e) {
          const int n = e / 128, j = (e % 128) / 32, p = e % 32;
          const int lo = (blk->qs[32 * n + p] >> (2 * j)) & 3;
          const int hi = (blk->hmask[p] >> (4 * n + j)) & 1;
          s += (lo - (hi ? 0 : 4)) * xq[e];
        }
        isum += q3k_scale(blk->scales, k) * s;
      }
      sum += h16(r + b * sizeof(BlockQ3_K) + 108) * x.d[(t * x.cols) / 256 + b] * float(isum);
    }
    return sum;
  });
}

constexpr Kernel k_q4_0 = k_legacy<4, false>;
constexpr Kernel k_q4_1 = k_legacy<4, true>;

#include "core/cpu/quant_kernel_table.inc"

}  // namespace

Kernel portable_kernel(QuantType t) {
  return kernel_for(t);
}

}  // namespace h2o::cpu::kern
