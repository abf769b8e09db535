#pragma once
// A quantized cache's rows on the device (step_desc.h's LowBitArrays), read
// and written with the arithmetic SEMANTICS.md ("KV precision") fixes, as the
// CPU's kvq (core/cpu/kv_quant.*) does: a group's m and s rounded to f16 (to
// nearest even), codes round_half_even((x - m) / s) clamped to [0, 2^b - 1]
// (all 0 when s is 0), and a value read back as one fused multiply-add
// m + code * s. Divisions are IEEE (nvcc's default; never --use_fast_math).
#include <cstdint>

#include "kernels/portable.h"
#include "kernels/step_desc.h"

namespace H2O_KERN_NS {

__device__ __forceinline__ float half_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t f32_to_half_bits(float x) { return __half_as_ushort(__float2half_rn(x)); }

// A group's (m, s), packed as LowBitArrays keeps them: m in the low 16 bits.
__device__ __forceinline__ float scale_m(uint32_t scale) { return half_bits_to_f32(uint16_t(scale & 0xffffu)); }
__device__ __forceinline__ float scale_s(uint32_t scale) { return half_bits_to_f32(uint16_t(scale >> 16)); }
__device__ __forceinline__ uint32_t scale_of(float lo, float hi, int bits) {
  const uint16_t m = f32_to_half_bits(lo);
  const uint16_t s = f32_to_half_bits((hi - half_bits_to_f32(m)) / float((1 << bits) - 1));
  return uint32_t(m) | (uint32_t(s) << 16);
}
__device__ __forceinline__ uint32_t code_of(float x, uint32_t scale, int bits) {
  const float s = scale_s(scale);
  if (s == 0.0f) return 0u;
  const float q = rintf((x - scale_m(scale)) / s);  // half to even in the default rounding mode
  return uint32_t(fminf(fmaxf(q, 0.0f), float((1 << bits) - 1)));
}
__device__ __forceinline__ float read_back(uint32_t code, uint32_t scale) {
  return fmaf(float(code), scale_s(scale), scale_m(scale));
}

// Planar packing (kvq::pack_row): a row of n b-bit codes is n * b / 8 bytes;
// channel c sits in byte c % stride at bit (c / stride) * b, stride being the
// row's bytes.
__device__ __forceinline__ uint32_t code_at(const uint8_t* row, int n, int bits, int c) {
  const int stride = n * bits / 8;
  return (uint32_t(row[c % stride]) >> ((c / stride) * bits)) & ((1u << bits) - 1u);
}

// One (layer, KV head) of a quantized cache, its run lengths as its counts
// said when the view was made.
struct LowBitHead {
  int hd = 0, key_bits = 0, value_bits = 0, group = 0, residual_target = 0;
  int sinks = 0, quantized = 0, residual = 0, groups = 0;
  uint16_t *full_k = nullptr, *full_v = nullptr;
  uint8_t *quant_k = nullptr, *quant_v = nullptr;
  uint32_t *value_scales = nullptr, *key_scales = nullptr;
  int32_t *group_of = nullptr, *counts = nullptr;
  int key_row_bytes = 0, value_row_bytes = 0;

  __device__ bool quantized_slot(int slot) const { return slot >= sinks && slot < sinks + quantized; }
  // The f16 row of a sink or residual slot.
  __device__ int full_row(int slot) const { return slot < sinks ? slot : slot - quantized; }
};

// The view of (layer, kv_head); its counts are read now.
__device__ __forceinline__ LowBitHead low_bit_head(const CacheArrays& c, int layer, int kv_head, int kv_heads, int hd) {
  const LowBitArrays& a = c.low;
  const size_t head = size_t(layer) * size_t(kv_heads) + size_t(kv_head);
  LowBitHead h;
  h.hd = hd;
  h.key_bits = a.key_bits;
  h.value_bits = a.value_bits;
  h.group = a.group;
  h.residual_target = a.residual;
  h.key_row_bytes = low_bit_row_bytes(hd, a.key_bits);
  h.value_row_bytes = low_bit_row_bytes(hd, a.value_bits);
  h.full_k = a.full_k + head * size_t(a.full_cap) * size_t(hd);
  h.full_v = a.full_v + head * size_t(a.full_cap) * size_t(hd);
  h.quant_k = a.quant_k + head * size_t(c.cap) * size_t(h.key_row_bytes);
  h.quant_v = a.quant_v + head * size_t(c.cap) * size_t(h.value_row_bytes);
  h.value_scales = a.value_scales ? a.value_scales + head * size_t(c.cap) * size_t(hd / a.group) : nullptr;
  h.key_scales = a.key_scales ? a.key_scales + head * size_t(a.group_cap) * size_t(hd) : nullptr;
  h.group_of = a.group_of + head * size_t(c.cap);
  h.counts = a.counts + head * kCounts;
  h.sinks = h.counts[kSinks];
  h.quantized = h.counts[kQuantized];
  h.residual = h.counts[kResidual];
  h.groups = h.counts[kGroups];
  return h;
}

}  // namespace H2O_KERN_NS
