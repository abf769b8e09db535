#pragma once
// GGUF's quantised blocks (ggml-common.h) and the arithmetic that turns their
// codes into values, written once for the CPU and the GPU: quant.cpp's
// dequantisation and the CUDA kernels that multiply blocks in registers
// (kernels/quant_formats.cuh) call the same functions below, so the device
// holds the values the CPU computes, bit for bit. Plain structs and H2O_HD
// functions on bytes and 32-bit words (the kernels decode from registers):
// nothing here allocates or throws.
//
// Rounding: each product and difference is rounded on its own, in the order
// ggml's C source writes it (mul_rn, sub_rn): on the GPU through __fmul_rn /
// __fsub_rn, which nvcc never fuses into an FMA; on the host as plain
// operators, so a host file using these must be built with -ffp-contract=off
// (quant.cpp is, and so are the emulated kernels: kernels/simt/CMakeLists.txt).
#include <cstdint>

#include "core/base/host_device.h"
#include "core/model/dtype.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace h2o {

inline constexpr int kQK = 32;     // elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
inline constexpr int kQK_K = 256;  // elements per super-block of the K-quants

// ---- block layouts (ggml-common.h) ------------------------------------------
// Scales are IEEE half floats stored as raw bits. Comments give the value of
// element i of the block.

// 8.5 bits/weight. x[i] = d * qs[i]
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
// 4.5 bits/weight. Byte j holds x[j] (low nibble) and x[j + 16] (high nibble):
// x = d * (nibble - 8).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
// 5 bits/weight. As Q4_0 without the offset, plus a min: x = d * nibble + m.
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
// 5.5 bits/weight. Nibbles as Q4_0; bit i of qh (little-endian u32) is bit 4
// of element i: x = d * (q - 16), q in [0, 31].
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
// 6 bits/weight. As Q5_0 without the offset, plus a min: x = d * q + m.
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
// 2.625 bits/weight. 16 sub-blocks of 16; scales[k] = scale (low nibble) and
// min (high nibble) of elements 16k..16k+15. Element e = 128n + 32j + p
// (n < 2, j < 4, p < 32) is bits 2j..2j+1 of qs[32n + p]:
// x = d * scale * q - dmin * min.
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
// 3.4375 bits/weight. 16 sub-blocks of 16 with 6-bit scales s (stored s + 32,
// packed in 12 bytes, see q3k_scale). Element e = 128n + 32j + p: low two bits
// as Q2_K, high bit is bit 4n + j of hmask[p]; q = low - (high ? 0 : 4):
// x = d * s * q.
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
// 4.5 bits/weight. 8 sub-blocks of 32 with 6-bit scale and min (packed in 12
// bytes, see k4_scale_min). Element e = 64j + p (j < 4, p < 32) is the low
// nibble of qs[32j + p] for p < 32 in sub-block 2j, element 64j + 32 + p the
// high nibble, sub-block 2j + 1: x = d * scale * q - dmin * min.
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
// 5.5 bits/weight. As Q4_K plus a fifth bit: element 64j + p has bit 2j of
// qh[p], element 64j + 32 + p bit 2j + 1.
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
// 6.5625 bits/weight. 16 sub-blocks of 16 with signed 8-bit scales. Element
// e = 128n + 32j + p: low nibble of ql[64n + p + 32 (j & 1)] (j < 2) or its
// high nibble (j >= 2), bits 2j..2j+1 of qh[32n + p] on top: x = d * s * (q - 32).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// ---- rounding as ggml's C source rounds --------------------------------------

H2O_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
H2O_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
// An IEEE half's bits widened to float (exact).
H2O_HD float half_bits_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return f16_to_f32(h);
#endif
}

// ---- scales ---------------------------------------------------------------------

// Scale and min of sub-block j < 8 of Q4_K / Q5_K from the 12 packed bytes
// read as three little-endian words a0, a1, a2 (ggml's get_scale_min_k4):
// bytes 0-3 hold scales 0-3 (6 bits) and the top 2 bits of scales 4-7,
// bytes 4-7 the same for the mins, bytes 8-11 the low 4 bits of scale (low
// nibble) and min (high nibble) 4-7.
H2O_HD void k4_scale_min_words(uint32_t a0, uint32_t a1, uint32_t a2, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = int((a0 >> (8 * j)) & 63);
    *min = int((a1 >> (8 * j)) & 63);
  } else {
    const int k = 8 * (j - 4);
    *scale = int(((a2 >> k) & 0x0F) | ((a0 >> (k + 6)) & 3) << 4);
    *min = int(((a2 >> (k + 4)) & 0x0F) | ((a1 >> (k + 6)) & 3) << 4);
  }
}

// A sub-block's multiplier d * s of a K-quant (Q4_K/Q5_K scale or min, Q6_K scale).
H2O_HD float k_scale(float d, int s) { return mul_rn(d, float(s)); }

// ---- one 32-bit word of codes to integer codes -----------------------------------
// Byte k of the input words is the k-th of four consecutive code bytes; byte
// k of the result is one element's integer code q, 0..63 (signed for Q8_0),
// ready for a 4-byte integer dot product (__dp4a). `high` picks the high
// nibble's elements. Each format's value is a * q - b, a and b per (sub-)block
// (the decoders below; kernels/quant_formats.cuh's integer path).

// Q4_0, Q4_K: the low (high == 0) or high nibbles of four code bytes.
H2O_HD uint32_t nibble_codes(uint32_t qs, int high) { return (qs >> (4 * high)) & 0x0F0F0F0Fu; }
// Q5_K: nibbles of qs bytes p.., bit 4 from bit 2j + high of qh bytes p...
H2O_HD uint32_t q5_k_codes(uint32_t qs, uint32_t qh, int j, int high) {
  return nibble_codes(qs, high) | ((qh >> (2 * j + high)) & 0x01010101u) << 4;
}
// Q6_K: nibbles of ql bytes, bits 4-5 from bits 2h + 4 high of qh bytes (q - 32 is the signed code).
H2O_HD uint32_t q6_k_codes(uint32_t ql, uint32_t qh, int h, int high) {
  return nibble_codes(ql, high) | ((qh >> (2 * h + 4 * high)) & 0x03030303u) << 4;
}
H2O_HD int code_byte(uint32_t codes, int k) { return int((codes >> (8 * k)) & 0xFFu); }

// ---- one 32-bit word of codes to values ------------------------------------------
// Byte k of a word is the k-th of four consecutive code bytes; each function
// says which elements its outputs are.

// Q8_0: qs bytes 4w..4w+3 -> elements 4w..4w+3.
H2O_HD void q8_0_word(uint32_t qs, float d, float v[4]) {
  for (int k = 0; k < 4; ++k) v[k] = float(int8_t(uint8_t(qs >> (8 * k)))) * d;
}

// Q4_0: qs bytes 4w..4w+3 -> elements 4w.. (low nibbles) and 16 + 4w.. (high).
H2O_HD void q4_0_word(uint32_t qs, float d, float lo[4], float hi[4]) {
  const uint32_t l = nibble_codes(qs, 0), h = nibble_codes(qs, 1);
  for (int k = 0; k < 4; ++k) {
    lo[k] = float(code_byte(l, k) - 8) * d;
    hi[k] = float(code_byte(h, k) - 8) * d;
  }
}

// Q4_K: qs bytes 32j + p.. (p a multiple of 4) -> elements 64j + p.. (low
// nibbles, sub-block 2j: multiplier d1, min m1) and 64j + 32 + p.. (high, 2j + 1).
H2O_HD void q4_k_word(uint32_t qs, float d1, float m1, float d2, float m2, float lo[4], float hi[4]) {
  const uint32_t l = nibble_codes(qs, 0), h = nibble_codes(qs, 1);
  for (int k = 0; k < 4; ++k) {
    lo[k] = sub_rn(mul_rn(d1, float(code_byte(l, k))), m1);
    hi[k] = sub_rn(mul_rn(d2, float(code_byte(h, k))), m2);
  }
}

// Q5_K: as q4_k_word, with qh bytes p..p+3 giving bit 4 (bit 2j low, 2j + 1 high).
H2O_HD void q5_k_word(uint32_t qs, uint32_t qh, int j, float d1, float m1, float d2, float m2, float lo[4],
                      float hi[4]) {
  const uint32_t l = q5_k_codes(qs, qh, j, 0), h = q5_k_codes(qs, qh, j, 1);
  for (int k = 0; k < 4; ++k) {
    lo[k] = sub_rn(mul_rn(d1, float(code_byte(l, k))), m1);
    hi[k] = sub_rn(mul_rn(d2, float(code_byte(h, k))), m2);
  }
}

// Q6_K: ql bytes 64n + 32h + p.. and qh bytes 32n + p.. (h < 2, p a multiple
// of 4) -> elements 128n + 32h + p.. (low nibbles, qh bits 2h: j = h,
// multiplier s1 = d * scale) and 128n + 32(h + 2) + p.. (high nibbles, qh bits
// 2h + 4: j = h + 2, s2). ggml evaluates d * scale * (code - 32) left to right.
H2O_HD void q6_k_word(uint32_t ql, uint32_t qh, int h, float s1, float s2, float lo[4], float hi[4]) {
  const uint32_t l = q6_k_codes(ql, qh, h, 0), u = q6_k_codes(ql, qh, h, 1);
  for (int k = 0; k < 4; ++k) {
    lo[k] = mul_rn(s1, float(code_byte(l, k) - 32));
    hi[k] = mul_rn(s2, float(code_byte(u, k) - 32));
  }
}

}  // namespace h2o
