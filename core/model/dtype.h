#pragma once
// Element types of weight tensors: floats and GGUF's quantised blocks, with
// ggml's numeric ids (what GGUF tensor infos store). Block layouts, sizes and
// conversions of the quantised ones are in core/model/quant.h.
#include <cstdint>
#include <cstring>
#include <string>

namespace h2o {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
};

// F32, F16 and BF16: one element per value, read as is.
inline bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
// Bytes per element of a float type (quantised types have blocks: quant.h's row_bytes).
inline int dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }
// "f32", "q4_k": the lower-case names flags and manifests use.
const char* dtype_name(DType t);

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round-to-nearest-even conversions, used by writers (tests, synthetic models).
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return uint16_t(sign | 0x7e00);
  if (x >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // overflow -> inf
  if (x < 0x38800000u) {  // f16 subnormal (unit 2^-24) or zero
    if (x < 0x33000000u) return uint16_t(sign);
    const uint32_t e = x >> 23;
    const uint32_t m = (x & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // m * 2^(e-150) / 2^-24
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = ((x - 0x38000000u) >> 13);
  const uint32_t rem = x & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return uint16_t(sign | h);
}

// Converts n elements of type t at src to float32 (n a whole number of blocks).
void convert_to_f32(const void* src, DType t, size_t n, float* dst);

}  // namespace h2o
