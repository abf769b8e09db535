// Quantisers (writers) for the ggml block types: reference quality, for test
// files and synthetic models. Legacy types round to nearest against the
// block's extreme values as ggml's *_ref quantisers do; the K-quants pick each
// sub-block's scale (and min) from a few candidates by least squares, then
// quantise every element against the scales exactly as they are stored
// (half-float super-block scales times 4-, 6- or 8-bit sub-block scales), so
// the error bound holds for the values dequantize_row will give back.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/model/dtype.h"
#include "core/model/quant.h"

namespace h2o {
namespace {

inline int nearest(float x) { return int(std::nearbyint(x)); }  // round half to even
inline int clampi(int v, int lo, int hi) { return std::min(hi, std::max(lo, v)); }
// The value a float takes once stored as a half.
inline float as_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// The element of x[0..n) with the largest magnitude, with its sign.
float signed_absmax(const float* x, int n) {
  float amax = 0, vmax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  return vmax;
}

// x ~ s * q with integer q in [nmin, nmax] (nmin < 0 < nmax): tries scales
// that map the largest-magnitude element near nmin, refits s by least squares
// for each choice of q, and returns the s with the smallest squared error.
float fit_scale(const float* x, int n, int nmin, int nmax) {
  const float vmax = signed_absmax(x, n);
  if (vmax == 0) return 0;
  float best_s = 0, best_err = INFINITY;
  for (int k = -9; k <= 9; ++k) {
    const float iscale = (float(nmin) + 0.1f * float(k)) / vmax;
    double sqx = 0, sqq = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clampi(nearest(x[i] * iscale), nmin, nmax);
      sqx += double(q) * x[i];
      sqq += double(q) * q;
    }
    if (sqq == 0) continue;
    const float s = float(sqx / sqq);
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clampi(s != 0 ? nearest(x[i] / s) : 0, nmin, nmax);
      const double e = double(s) * q - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = float(err);
      best_s = s;
    }
  }
  return best_s;
}

// x ~ a * q - m with integer q in [0, nmax], a >= 0, m >= 0 (the block's
// offset is never above zero, as ggml's K-quants require): tries a few
// quantisation steps over the block's range, refits (a, m) by least squares
// for each, and keeps the pair with the smallest squared error.
void fit_scale_min(const float* x, int n, int nmax, float* a_out, float* m_out) {
  float lo = 0, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *a_out = 0;
  *m_out = -lo;
  if (hi <= lo) return;  // constant block (at or below zero): the min alone
  auto error_of = [&](float a, float m) {
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clampi(a > 0 ? nearest((x[i] + m) / a) : 0, 0, nmax);
      const double e = double(a) * q - m - x[i];
      err += e * e;
    }
    return err;
  };
  double best = error_of((hi - lo) / float(nmax), -lo);
  *a_out = (hi - lo) / float(nmax);
  for (int k = -6; k <= 6; ++k) {
    const float iscale = (float(nmax) + 0.1f * float(k)) / (hi - lo);
    double sq = 0, sx = 0, sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clampi(nearest((x[i] - lo) * iscale), 0, nmax);
      sq += q;
      sx += x[i];
      sqq += double(q) * q;
      sqx += double(q) * x[i];
    }
    const double det = n * sqq - sq * sq;
    if (det <= 0) continue;
    double a = (n * sqx - sq * sx) / det;
    double b = (sx - a * sq) / n;  // x ~ a q + b
    if (b > 0) {                   // the offset must not be positive: refit with b = 0
      b = 0;
      a = sqx / sqq;
    }
    if (a <= 0) continue;
    const double err = error_of(float(a), float(-b));
    if (err < best) {
      best = err;
      *a_out = float(a);
      *m_out = float(-b);
    }
  }
}

void put_f16(uint16_t* dst, float v) { *dst = f32_to_f16(v); }

void quant_q8_0(const float* x, BlockQ8_0* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = as_f16(amax / 127);
    put_f16(&b[i].d, d);
    const float id = d != 0 ? 1 / d : 0;
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = int8_t(clampi(nearest(x[j] * id), -127, 127));
  }
}

// Q4_0 / Q5_0: d = (signed extreme) / -(2^(bits-1)), q = round(x / d) + offset.
template <int kBits>
void quant_offset(const float* x, uint16_t* d_out, uint8_t* q) {
  constexpr int kOff = 1 << (kBits - 1), kMax = (1 << kBits) - 1;
  const float d = as_f16(signed_absmax(x, kQK) / float(-kOff));
  put_f16(d_out, d);
  const float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < kQK; ++j) q[j] = uint8_t(clampi(nearest(x[j] * id) + kOff, 0, kMax));
}

// Q4_1 / Q5_1: x = d * q + m with m the block minimum, q in [0, 2^bits).
template <int kBits>
void quant_min(const float* x, uint16_t* d_out, uint16_t* m_out, uint8_t* q) {
  constexpr int kMax = (1 << kBits) - 1;
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float d = as_f16((hi - lo) / float(kMax)), m = as_f16(lo);
  put_f16(d_out, d);
  put_f16(m_out, m);
  const float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < kQK; ++j) q[j] = uint8_t(clampi(nearest((x[j] - m) * id), 0, kMax));
}

// Packs 32 values below 16 (or 32) as Q4_0/Q5_0 do: byte j = q[j] | q[j+16] << 4,
// bit 4 of element e into bit e of qh.
void pack_nibbles(const uint8_t q[32], uint8_t qs[16], uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
  for (int e = 0; e < 32; ++e) h |= uint32_t((q[e] >> 4) & 1) << e;
  if (qh)
    for (int k = 0; k < 4; ++k) qh[k] = uint8_t(h >> (8 * k));
}

// The super-block scale for sub-block scales s[] stored as integers in
// [0, levels]: returns the stored (half) value and the integer scales.
float quantise_scales_unsigned(const float* s, int count, int levels, uint8_t* out) {
  float smax = 0;
  for (int k = 0; k < count; ++k) smax = std::max(smax, s[k]);
  const float d = as_f16(smax / float(levels));
  for (int k = 0; k < count; ++k) out[k] = uint8_t(d > 0 ? clampi(nearest(s[k] / d), 0, levels) : 0);
  return d;
}

// Same for signed sub-block scales in [lo, hi] (lo < 0): the largest-magnitude
// scale maps to lo, as ggml does, so the whole negative range is used.
float quantise_scales_signed(const float* s, int count, int lo, int hi, int8_t* out) {
  const float d = as_f16(signed_absmax(s, count) / float(lo));
  for (int k = 0; k < count; ++k) out[k] = int8_t(d != 0 ? clampi(nearest(s[k] / d), lo, hi) : 0);
  return d;
}

// Q4_K / Q5_K: 8 sub-blocks of 32, x = d*sc*q - dmin*m, q in [0, 2^bits).
template <int kBits>
void quant_k4(const float* x, uint16_t* d_out, uint16_t* dmin_out, uint8_t scales[12], uint8_t q[256]) {
  constexpr int kMax = (1 << kBits) - 1;
  float a[8], m[8];
  for (int j = 0; j < 8; ++j) fit_scale_min(x + 32 * j, 32, kMax, &a[j], &m[j]);
  uint8_t ls[8], lm[8];
  const float d = quantise_scales_unsigned(a, 8, 63, ls);
  const float dmin = quantise_scales_unsigned(m, 8, 63, lm);
  put_f16(d_out, d);
  put_f16(dmin_out, dmin);
  for (int j = 0; j < 4; ++j) {
    scales[j] = uint8_t(ls[j] | (ls[j + 4] >> 4) << 6);
    scales[j + 4] = uint8_t(lm[j] | (lm[j + 4] >> 4) << 6);
    scales[j + 8] = uint8_t((ls[j + 4] & 0x0F) | (lm[j + 4] & 0x0F) << 4);
  }
  for (int j = 0; j < 8; ++j) {
    const float sd = d * float(ls[j]), sm = dmin * float(lm[j]);  // as dequantize_row computes them
    for (int p = 0; p < 32; ++p) {
      const float v = x[32 * j + p];
      q[32 * j + p] = uint8_t(sd > 0 ? clampi(nearest((v + sm) / sd), 0, kMax) : 0);
    }
  }
}

void quant_q4_k(const float* x, BlockQ4_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    uint8_t q[256];
    quant_k4<4>(x, &b[i].d, &b[i].dmin, b[i].scales, q);
    for (int j = 0; j < 4; ++j)
      for (int p = 0; p < 32; ++p) b[i].qs[32 * j + p] = uint8_t(q[64 * j + p] | q[64 * j + 32 + p] << 4);
  }
}

void quant_q5_k(const float* x, BlockQ5_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    uint8_t q[256];
    quant_k4<5>(x, &b[i].d, &b[i].dmin, b[i].scales, q);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int j = 0; j < 4; ++j)
      for (int p = 0; p < 32; ++p) {
        const uint8_t lo = q[64 * j + p], hi = q[64 * j + 32 + p];
        b[i].qs[32 * j + p] = uint8_t((lo & 0x0F) | (hi & 0x0F) << 4);
        b[i].qh[p] |= uint8_t(((lo >> 4) & 1) << (2 * j) | ((hi >> 4) & 1) << (2 * j + 1));
      }
  }
}

void quant_q6_k(const float* x, BlockQ6_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float s[16];
    for (int k = 0; k < 16; ++k) s[k] = fit_scale(x + 16 * k, 16, -32, 31);
    const float d = quantise_scales_signed(s, 16, -128, 127, b[i].scales);
    put_f16(&b[i].d, d);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int e = 0; e < kQK_K; ++e) {
      const float sd = d * float(b[i].scales[e / 16]);
      const int q = clampi(sd != 0 ? nearest(x[e] / sd) : 0, -32, 31) + 32;
      const int n = e / 128, j = (e % 128) / 32, p = e % 32;
      uint8_t& l = b[i].ql[64 * n + p + 32 * (j & 1)];
      if (j < 2)
        l = uint8_t((l & 0xF0) | (q & 0x0F));
      else
        l = uint8_t((l & 0x0F) | (q & 0x0F) << 4);
      b[i].qh[32 * n + p] |= uint8_t((q >> 4) << (2 * j));
    }
  }
}

void quant_q2_k(const float* x, BlockQ2_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float a[16], m[16];
    for (int k = 0; k < 16; ++k) fit_scale_min(x + 16 * k, 16, 3, &a[k], &m[k]);
    uint8_t ls[16], lm[16];
    const float d = quantise_scales_unsigned(a, 16, 15, ls);
    const float dmin = quantise_scales_unsigned(m, 16, 15, lm);
    put_f16(&b[i].d, d);
    put_f16(&b[i].dmin, dmin);
    for (int k = 0; k < 16; ++k) b[i].scales[k] = uint8_t(ls[k] | lm[k] << 4);
    std::memset(b[i].qs, 0, sizeof b[i].qs);
    for (int e = 0; e < kQK_K; ++e) {
      const float sd = d * float(ls[e / 16]), sm = dmin * float(lm[e / 16]);
      const int q = sd > 0 ? clampi(nearest((x[e] + sm) / sd), 0, 3) : 0;
      b[i].qs[32 * (e / 128) + e % 32] |= uint8_t(q << (2 * ((e % 128) / 32)));
    }
  }
}

void quant_q3_k(const float* x, BlockQ3_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float s[16];
    for (int k = 0; k < 16; ++k) s[k] = fit_scale(x + 16 * k, 16, -4, 3);
    int8_t sc[16];
    const float d = quantise_scales_signed(s, 16, -32, 31, sc);
    put_f16(&b[i].d, d);
    // 6-bit stored values u = sc + 32: low nibbles in bytes 0-7 (k < 8 low,
    // k >= 8 high nibble of byte k - 8), top 2 bits in bytes 8-11.
    std::memset(b[i].scales, 0, sizeof b[i].scales);
    for (int k = 0; k < 16; ++k) {
      const int u = sc[k] + 32;
      b[i].scales[k % 8] |= uint8_t((u & 0x0F) << (4 * (k / 8)));
      b[i].scales[8 + k % 4] |= uint8_t((u >> 4) << (2 * (k / 4)));
    }
    std::memset(b[i].qs, 0, sizeof b[i].qs);
    std::memset(b[i].hmask, 0, sizeof b[i].hmask);
    for (int e = 0; e < kQK_K; ++e) {
      const float sd = d * float(sc[e / 16]);
      const int u = clampi(sd != 0 ? nearest(x[e] / sd) : 0, -4, 3) + 4;  // q + 4 in [0, 7]
      const int n = e / 128, j = (e % 128) / 32, p = e % 32;
      b[i].qs[32 * n + p] |= uint8_t((u & 3) << (2 * j));
      b[i].hmask[p] |= uint8_t((u >> 2) << (4 * n + j));
    }
  }
}

}  // namespace

void quantize_row(QuantType t, const float* src, void* dst, int64_t n) {
  const int64_t nb = int64_t(row_bytes(t, n) / block_bytes(t));
  auto* out = static_cast<uint8_t*>(dst);
  switch (t) {
    case QuantType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case QuantType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(src[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case QuantType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case QuantType::Q8_0: return quant_q8_0(src, static_cast<BlockQ8_0*>(dst), nb);
    case QuantType::Q4_0:
      for (int64_t i = 0; i < nb; ++i) {
        auto& b = static_cast<BlockQ4_0*>(dst)[i];
        uint8_t q[32];
        quant_offset<4>(src + i * kQK, &b.d, q);
        pack_nibbles(q, b.qs, nullptr);
      }
      return;
    case QuantType::Q5_0:
      for (int64_t i = 0; i < nb; ++i) {
        auto& b = static_cast<BlockQ5_0*>(dst)[i];
        uint8_t q[32];
        quant_offset<5>(src + i * kQK, &b.d, q);
        pack_nibbles(q, b.qs, b.qh);
      }
      return;
    case QuantType::Q4_1:
      for (int64_t i = 0; i < nb; ++i) {
        auto& b = static_cast<BlockQ4_1*>(dst)[i];
        uint8_t q[32];
        quant_min<4>(src + i * kQK, &b.d, &b.m, q);
        pack_nibbles(q, b.qs, nullptr);
      }
      return;
    case QuantType::Q5_1:
      for (int64_t i = 0; i < nb; ++i) {
        auto& b = static_cast<BlockQ5_1*>(dst)[i];
        uint8_t q[32];
        quant_min<5>(src + i * kQK, &b.d, &b.m, q);
        pack_nibbles(q, b.qs, b.qh);
      }
      return;
    case QuantType::Q2_K: return quant_q2_k(src, static_cast<BlockQ2_K*>(dst), nb);
    case QuantType::Q3_K: return quant_q3_k(src, static_cast<BlockQ3_K*>(dst), nb);
    case QuantType::Q4_K: return quant_q4_k(src, static_cast<BlockQ4_K*>(dst), nb);
    case QuantType::Q5_K: return quant_q5_k(src, static_cast<BlockQ5_K*>(dst), nb);
    case QuantType::Q6_K: return quant_q6_k(src, static_cast<BlockQ6_K*>(dst), nb);
  }
}

}  // namespace h2o
