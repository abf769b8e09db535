#pragma once
// A quantized cache's rows on the device (step_desc.h's LowBitArrays): the
// layout and arithmetic of core/policy/low_bit_layout.h, with the device's f16
// rounding (to nearest even, as the CPU's). Divisions are IEEE (nvcc's
// default; never --use_fast_math).
#include <cstdint>

#include "kernels/portable.h"
#include "kernels/step_desc.h"

namespace H2O_KERN_NS {

__device__ __forceinline__ float half_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t f32_to_half_bits(float x) { return __half_as_ushort(__float2half_rn(x)); }

struct DeviceHalf {
  __device__ static uint16_t bits(float x) { return f32_to_half_bits(x); }
  __device__ static float value(uint16_t h) { return half_bits_to_f32(h); }
};
using DeviceMath = kvq::Math<DeviceHalf>;

// A code (below 2^23) as a float, exactly: its bits under 2^23's exponent
// give 2^23 + code, less 2^23. Two full-rate operations where float(code)
// is an I2F, which an SM issues at a fraction of the FMA rate: attention
// converts sixteen codes a key in each lane.
__device__ __forceinline__ float code_to_f32(uint32_t code) {
  return __uint_as_float(0x4B000000u | code) - 8388608.0f;
}

// read_back with the scale's m and s already widened to f32: the same fused
// m + code * s, so the same bits.
__device__ __forceinline__ float read_back(uint32_t code, float m, float s) { return fmaf(code_to_f32(code), s, m); }

// A value read back from its code under a scale kept as a word (LowBitArrays).
__device__ __forceinline__ float read_back(uint32_t code, uint32_t scale) {
  return DeviceMath::read_back(code, kvq::scale_from_word(scale));
}

// One (layer, KV head) of a quantized cache: its shape, its runs as its
// counts said when the view was made, and its arrays.
struct LowBitView {
  kvq::Shape shape;
  kvq::Runs runs;
  uint16_t *full_k = nullptr, *full_v = nullptr;
  uint8_t *quant_k = nullptr, *quant_v = nullptr;
  uint32_t *value_scales = nullptr, *key_scales = nullptr;
  int32_t *group_of = nullptr, *counts = nullptr;
};

// The view of (layer, kv_head); its counts are read now.
__device__ __forceinline__ LowBitView low_bit_view(const CacheArrays& c, int layer, int kv_head, int kv_heads) {
  const LowBitArrays& a = c.low;
  const kvq::Shape& sh = a.shape;
  const size_t head = size_t(layer) * size_t(kv_heads) + size_t(kv_head);
  LowBitView h;
  h.shape = sh;
  h.full_k = a.full_k + head * size_t(a.full_cap) * size_t(sh.hd);
  h.full_v = a.full_v + head * size_t(a.full_cap) * size_t(sh.hd);
  h.quant_k = a.quant_k + head * size_t(c.cap) * size_t(sh.key_row_bytes());
  h.quant_v = a.quant_v + head * size_t(c.cap) * size_t(sh.value_row_bytes());
  h.value_scales = a.value_scales ? a.value_scales + head * size_t(c.cap) * size_t(sh.value_runs()) : nullptr;
  h.key_scales = a.key_scales ? a.key_scales + head * size_t(a.group_cap) * size_t(sh.hd) : nullptr;
  h.group_of = a.group_of + head * size_t(c.cap);
  h.counts = a.counts + head * kCounts;
  h.runs = runs_at(h.counts);
  return h;
}

}  // namespace H2O_KERN_NS
