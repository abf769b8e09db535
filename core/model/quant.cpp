// Type table, row sizes and exact dequantisation of the ggml block types.
// Built with -ffp-contract=off (core/CMakeLists.txt): every float expression
// below is rounded step by step, as ggml's reference C code writes it.
#include "core/model/quant.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "core/model/dtype.h"
#include "core/base/error.h"

namespace h2o {
namespace {

struct TypeInfo {
  QuantType type;
  const char* name;
  int block;
  size_t bytes;
};

constexpr TypeInfo kTypes[] = {
    {QuantType::F32, "F32", 1, 4},
    {QuantType::F16, "F16", 1, 2},
    {QuantType::Q4_0, "Q4_0", kQK, sizeof(BlockQ4_0)},
    {QuantType::Q4_1, "Q4_1", kQK, sizeof(BlockQ4_1)},
    {QuantType::Q5_0, "Q5_0", kQK, sizeof(BlockQ5_0)},
    {QuantType::Q5_1, "Q5_1", kQK, sizeof(BlockQ5_1)},
    {QuantType::Q8_0, "Q8_0", kQK, sizeof(BlockQ8_0)},
    {QuantType::Q2_K, "Q2_K", kQK_K, sizeof(BlockQ2_K)},
    {QuantType::Q3_K, "Q3_K", kQK_K, sizeof(BlockQ3_K)},
    {QuantType::Q4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K)},
    {QuantType::Q5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K)},
    {QuantType::Q6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K)},
    {QuantType::BF16, "BF16", 1, 2},
};

const TypeInfo* find_info(QuantType t) {
  for (const auto& info : kTypes)
    if (info.type == t) return &info;
  return nullptr;
}

const TypeInfo& info_of(QuantType t) {
  const TypeInfo* info = find_info(t);
  if (!info) fail("ggml type " + std::to_string(uint32_t(t)), "not supported by the quantised-type module");
  return *info;
}

inline float h2f(uint16_t h) { return f16_to_f32(h); }

// Four code bytes as the little-endian word the shared decoders take (quant_blocks.h).
inline uint32_t word_at(const void* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// Q8_0, Q4_0, Q4_K, Q5_K and Q6_K decode through quant_blocks.h's word
// functions, the ones the CUDA kernels call on the same bytes.
void dequant_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = h2f(b[i].d);
    for (int w = 0; w < 8; ++w) q8_0_word(word_at(b[i].qs + 4 * w), d, y + 4 * w);
  }
}

void dequant_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = h2f(b[i].d);
    for (int w = 0; w < 4; ++w) q4_0_word(word_at(b[i].qs + 4 * w), d, y + 4 * w, y + 16 + 4 * w);
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = h2f(b[i].d), m = h2f(b[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = float(b[i].qs[j] & 0x0F) * d + m;
      y[j + 16] = float(b[i].qs[j] >> 4) * d + m;
    }
  }
}

// Bit e of the little-endian u32 qh is bit 4 of element e.
inline uint32_t load_qh(const uint8_t qh[4]) {
  return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

void dequant_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = h2f(b[i].d);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b[i].qs[j] & 0x0F) | int((qh >> j) & 1) << 4;
      const int hi = (b[i].qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
      y[j] = float(lo - 16) * d;
      y[j + 16] = float(hi - 16) * d;
    }
  }
}

void dequant_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = h2f(b[i].d), m = h2f(b[i].m);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b[i].qs[j] & 0x0F) | int((qh >> j) & 1) << 4;
      const int hi = (b[i].qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
      y[j] = float(lo) * d + m;
      y[j + 16] = float(hi) * d + m;
    }
  }
}

void dequant_q2_k(const BlockQ2_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
    for (int e = 0; e < kQK_K; e += 16) {  // one sub-block of 16
      const uint8_t sc = b[i].scales[e / 16];
      const float dl = d * float(sc & 0x0F), ml = dmin * float(sc >> 4);
      const uint8_t* q = b[i].qs + 32 * (e / 128) + (e % 32);
      const int shift = 2 * ((e % 128) / 32);
      for (int p = 0; p < 16; ++p) *y++ = dl * float((q[p] >> shift) & 3) - ml;
    }
  }
}

void dequant_q3_k(const BlockQ3_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(b[i].d);
    for (int e = 0; e < kQK_K; e += 16) {
      const float dl = d * float(q3k_scale(b[i].scales, e / 16));
      const int n = e / 128, j = (e % 128) / 32, p0 = e % 32;
      const uint8_t* q = b[i].qs + 32 * n + p0;
      const uint8_t* hm = b[i].hmask + p0;
      const uint8_t bit = uint8_t(1u << (4 * n + j));
      for (int p = 0; p < 16; ++p) *y++ = dl * float(((q[p] >> (2 * j)) & 3) - ((hm[p] & bit) ? 0 : 4));
    }
  }
}

// The multipliers d * scale and dmin * min of sub-blocks 2j and 2j + 1 of a Q4_K / Q5_K block.
struct K4Pair {
  float d1, m1, d2, m2;
};
K4Pair k4_pair(uint16_t d_bits, uint16_t dmin_bits, const uint8_t scales[12], int j) {
  const float d = h2f(d_bits), dmin = h2f(dmin_bits);
  const uint32_t a0 = word_at(scales), a1 = word_at(scales + 4), a2 = word_at(scales + 8);
  int sc1, m1, sc2, m2;
  k4_scale_min_words(a0, a1, a2, 2 * j, &sc1, &m1);
  k4_scale_min_words(a0, a1, a2, 2 * j + 1, &sc2, &m2);
  return {k_scale(d, sc1), k_scale(dmin, m1), k_scale(d, sc2), k_scale(dmin, m2)};
}

void dequant_q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK_K)
    for (int j = 0; j < 4; ++j) {
      const K4Pair s = k4_pair(b[i].d, b[i].dmin, b[i].scales, j);
      for (int p = 0; p < 32; p += 4)
        q4_k_word(word_at(b[i].qs + 32 * j + p), s.d1, s.m1, s.d2, s.m2, y + 64 * j + p, y + 64 * j + 32 + p);
    }
}

void dequant_q5_k(const BlockQ5_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK_K)
    for (int j = 0; j < 4; ++j) {
      const K4Pair s = k4_pair(b[i].d, b[i].dmin, b[i].scales, j);
      for (int p = 0; p < 32; p += 4)
        q5_k_word(word_at(b[i].qs + 32 * j + p), word_at(b[i].qh + p), j, s.d1, s.m1, s.d2, s.m2, y + 64 * j + p,
                  y + 64 * j + 32 + p);
    }
}

void dequant_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const float d = h2f(b[i].d);
    for (int n = 0; n < 2; ++n)
      for (int h = 0; h < 2; ++h)
        for (int p = 0; p < 32; p += 4) {
          // Sub-block (e / 16) of e = 128n + 32j + p, for j = h and j = h + 2.
          const float s1 = k_scale(d, b[i].scales[8 * n + 2 * h + p / 16]);
          const float s2 = k_scale(d, b[i].scales[8 * n + 2 * h + 4 + p / 16]);
          q6_k_word(word_at(b[i].ql + 64 * n + 32 * h + p), word_at(b[i].qh + 32 * n + p), h, s1, s2,
                    y + 128 * n + 32 * h + p, y + 128 * n + 32 * (h + 2) + p);
        }
  }
}

}  // namespace

std::optional<QuantType> quant_type_from_id(uint32_t id) {
  for (const auto& info : kTypes)
    if (uint32_t(info.type) == id) return info.type;
  return std::nullopt;
}

std::optional<QuantType> quant_type_from_name(std::string_view name) {
  for (const auto& info : kTypes)
    if (name == info.name) return info.type;
  return std::nullopt;
}

const char* quant_type_name(QuantType t) {
  const TypeInfo* info = find_info(t);
  return info ? info->name : "unknown";
}

int block_size(QuantType t) { return info_of(t).block; }
size_t block_bytes(QuantType t) { return info_of(t).bytes; }

size_t row_bytes(QuantType t, int64_t n) {
  const TypeInfo& info = info_of(t);
  if (n < 0 || n % info.block != 0)
    fail(std::string(info.name) + " row of " + std::to_string(n) + " elements",
         "not a multiple of the type's block of " + std::to_string(info.block));
  return size_t(n / info.block) * info.bytes;
}

int64_t first_nonfinite_scale(QuantType t, const void* data, int64_t blocks) {
  constexpr size_t kNone = SIZE_MAX;
  size_t d = 0, m = kNone;  // offsets of the scale and the min in a block
  switch (t) {
    case QuantType::Q8_0: d = offsetof(BlockQ8_0, d); break;
    case QuantType::Q4_0: d = offsetof(BlockQ4_0, d); break;
    case QuantType::Q4_1: d = offsetof(BlockQ4_1, d), m = offsetof(BlockQ4_1, m); break;
    case QuantType::Q5_0: d = offsetof(BlockQ5_0, d); break;
    case QuantType::Q5_1: d = offsetof(BlockQ5_1, d), m = offsetof(BlockQ5_1, m); break;
    case QuantType::Q2_K: d = offsetof(BlockQ2_K, d), m = offsetof(BlockQ2_K, dmin); break;
    case QuantType::Q3_K: d = offsetof(BlockQ3_K, d); break;
    case QuantType::Q4_K: d = offsetof(BlockQ4_K, d), m = offsetof(BlockQ4_K, dmin); break;
    case QuantType::Q5_K: d = offsetof(BlockQ5_K, d), m = offsetof(BlockQ5_K, dmin); break;
    case QuantType::Q6_K: d = offsetof(BlockQ6_K, d); break;
    default: return -1;
  }
  const auto finite = [](const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return (h & 0x7C00) != 0x7C00;  // exponent all ones: infinity or NaN
  };
  const size_t bytes = block_bytes(t);
  const auto* p = static_cast<const uint8_t*>(data);
  for (int64_t i = 0; i < blocks; ++i, p += bytes)
    if (!finite(p + d) || (m != kNone && !finite(p + m))) return i;
  return -1;
}

void k4_scale_min(const uint8_t scales[12], int j, uint8_t* scale, uint8_t* min) {
  int s, m;
  k4_scale_min_words(word_at(scales), word_at(scales + 4), word_at(scales + 8), j, &s, &m);
  *scale = uint8_t(s);
  *min = uint8_t(m);
}

int q6k_code(const BlockQ6_K& b, int e) {
  // Low 4 bits: nibble (j / 2) of ql[64 n + 32 (j % 2) + p]; top 2 bits: bits 2j of qh[32 n + p],
  // for e = 128 n + 32 j + p.
  const int n = e / 128, j = (e % 128) / 32, p = e % 32;
  const uint8_t l = b.ql[64 * n + p + 32 * (j & 1)];
  return (j < 2 ? l & 0x0F : l >> 4) | ((b.qh[32 * n + p] >> (2 * j)) & 3) << 4;
}

int q3k_scale(const uint8_t scales[12], int k) {
  // Low 4 bits: nibble (k / 8) of byte k % 8; top 2 bits: bits 2 (k / 4) of byte 8 + k % 4.
  const int lo = k < 8 ? (scales[k] & 0x0F) : (scales[k - 8] >> 4);
  const int hi = (scales[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (lo | hi << 4) - 32;
}

void dequantize_row(QuantType t, const void* src, float* dst, int64_t n) {
  const int64_t nb = int64_t(row_bytes(t, n) / block_bytes(t));
  switch (t) {
    case QuantType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case QuantType::F16: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      return;
    }
    case QuantType::BF16: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    }
    case QuantType::Q8_0: return dequant_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
    case QuantType::Q4_0: return dequant_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
    case QuantType::Q4_1: return dequant_q4_1(static_cast<const BlockQ4_1*>(src), dst, nb);
    case QuantType::Q5_0: return dequant_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
    case QuantType::Q5_1: return dequant_q5_1(static_cast<const BlockQ5_1*>(src), dst, nb);
    case QuantType::Q2_K: return dequant_q2_k(static_cast<const BlockQ2_K*>(src), dst, nb);
    case QuantType::Q3_K: return dequant_q3_k(static_cast<const BlockQ3_K*>(src), dst, nb);
    case QuantType::Q4_K: return dequant_q4_k(static_cast<const BlockQ4_K*>(src), dst, nb);
    case QuantType::Q5_K: return dequant_q5_k(static_cast<const BlockQ5_K*>(src), dst, nb);
    case QuantType::Q6_K: return dequant_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb);
  }
}

}  // namespace h2o
