#pragma once
// The quantized KV layout of one (layer, KV head), written once for both
// caches (SEMANTICS.md, "KV precision"; KIVI's layout): the CPU's LowBitHead
// (core/cpu/low_bit_head.*) and the device's arrays (kernels/step_desc.h's
// LowBitArrays, read through kernels/low_bit_rows.cuh) both count, grow,
// flush, book and quantize with what is here, as cut_shape.h is written once
// for the cut. Only the f16 rounding is supplied per side (a `Half` with
// `bits(float)` and `value(uint16_t)`, both round to nearest even).
//
// Slots, in stream order, fall in three runs: the sinks (f16 rows), the
// quantized tokens (packed code rows in key groups of at most G consecutive
// tokens; f16 rows where that half keeps 16 bits) and the residual (f16 rows,
// the newest). The sinks and the residual share one array of f16 rows.
#include <cmath>
#include <cstdint>

#include "core/base/host_device.h"

namespace h2o::kvq {

// A group's numbers as IEEE half bits: x is read back as m + code * s. The
// device keeps it as one 32-bit word, m in the low half (scale_word).
struct alignas(4) Scale {
  uint16_t m = 0, s = 0;
};
H2O_HD uint32_t scale_word(Scale x) { return uint32_t(x.m) | (uint32_t(x.s) << 16); }
H2O_HD Scale scale_from_word(uint32_t w) { return Scale{uint16_t(w & 0xffffu), uint16_t(w >> 16)}; }

// Whether a half kept at `bits` is stored as codes (below 16 bits) rather than f16.
H2O_HD bool coded(int bits) { return bits < 16; }
// Bytes of one row of n b-bit codes (b = 16: the row as f16).
H2O_HD int row_bytes(int n, int bits) { return n * bits / 8; }

// How many tokens each run of one (layer, KV head) holds, and its key groups.
struct Runs {
  int sinks = 0, quantized = 0, residual = 0, groups = 0;
  H2O_HD int size() const { return sinks + quantized + residual; }
  H2O_HD int f16_tokens() const { return sinks + residual; }
  H2O_HD bool quantized_slot(int slot) const { return slot >= sinks && slot < sinks + quantized; }
  // The f16 row of a sink or residual slot.
  H2O_HD int full_row(int slot) const { return slot < sinks ? slot : slot - quantized; }
};

// The shape of the layout: head_dim channels, each half's bits, G and R.
struct Shape {
  int hd = 0, key_bits = 0, value_bits = 0, group = 0, residual = 0;

  // Either half below 16 bits: groups are quantized as they leave the residual.
  H2O_HD bool quantizes() const { return coded(key_bits) || coded(value_bits); }
  // The bytes of every array, per row of it (one table: the caches allocate,
  // book and count live bytes from these alone).
  H2O_HD int64_t f16_row_bytes() const { return int64_t(hd) * 2; }  // a sink or residual key (or value)
  H2O_HD int key_row_bytes() const { return row_bytes(hd, key_bits); }      // a quantized token's key codes
  H2O_HD int value_row_bytes() const { return row_bytes(hd, value_bits); }  // and value codes
  H2O_HD int value_runs() const { return hd / group; }                      // value numbers a quantized token
  H2O_HD int64_t value_scale_bytes() const { return coded(value_bits) ? int64_t(value_runs()) * 4 : 0; }
  H2O_HD int64_t key_group_bytes() const { return coded(key_bits) ? int64_t(hd) * 4 : 0; }  // a group's numbers
  // A quantized token's codes and value numbers.
  H2O_HD int64_t quantized_row_bytes() const { return key_row_bytes() + value_row_bytes() + value_scale_bytes(); }

  // KV bytes live, as SEMANTICS.md counts them: the f16 tokens' keys and
  // values at 2 bytes an element, the quantized tokens' codes and value
  // numbers, each key group's per-channel numbers.
  H2O_HD int64_t live_bytes(const Runs& r) const {
    return int64_t(r.f16_tokens()) * f16_row_bytes() * 2 + int64_t(r.quantized) * quantized_row_bytes() +
           int64_t(r.groups) * key_group_bytes();
  }
  // The flush rule: while the residual holds R + G tokens or more, its
  // oldest G are quantized as one group. How many groups leave it.
  H2O_HD int groups_to_flush(int residual_tokens) const {
    if (!quantizes() || residual_tokens < residual + group) return 0;
    return (residual_tokens - residual) / group;
  }
  // The runs after `flushed` groups have left the residual.
  H2O_HD Runs after_flush(Runs r, int flushed) const {
    r.quantized += flushed * group;
    r.residual -= flushed * group;
    r.groups += flushed;
    return r;
  }
  // The most each run may need by the end of a step that appends `rows`:
  // every new row in the residual, then all of it flushed (a group for each
  // whole G of it; one at least, so the group numbers exist from the start).
  H2O_HD Runs most_after_step(const Runs& r, int rows) const {
    Runs most;
    most.sinks = r.sinks;
    most.residual = r.residual + rows;  // f16 rows: sinks + residual
    most.quantized = r.quantized + r.residual + rows;
    const int flushable = (r.residual + rows) / group;
    most.groups = r.groups + flushable > 1 ? r.groups + flushable : 1;
    return most;
  }
};

// Planar packing of a row of n codes (n a multiple of 8 / bits): with p =
// 8 / bits codes a byte and stride = row_bytes(n, bits), byte j holds the
// codes of channels j, j + stride, j + 2 stride, ..., the first in the lowest
// bits, so a row unpacks with plain shifts over consecutive bytes.
H2O_HD uint32_t code_at(const uint8_t* row, int n, int bits, int c) {
  const int stride = row_bytes(n, bits);
  return (uint32_t(row[c % stride]) >> ((c / stride) * bits)) & ((1u << bits) - 1u);
}

#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
// Byte j of a packed row, code_of(c) giving channel c's code.
template <class CodeOf>
H2O_HD uint8_t packed_byte(int j, int n, int bits, CodeOf code_of) {
  const int stride = row_bytes(n, bits), per = 8 / bits;
  uint32_t byte = 0;
  for (int k = 0; k < per; ++k) byte |= uint32_t(code_of(j + k * stride)) << (k * bits);
  return uint8_t(byte);
}

// The quantization arithmetic, given the side's f16 rounding.
template <class Half>
struct Math {
  // m = f16(lo), s = f16((hi - m) / (2^bits - 1)), each rounded to nearest even.
  H2O_HD static Scale scale_of(float lo, float hi, int bits) {
    Scale out;
    out.m = Half::bits(lo);
    out.s = Half::bits((hi - Half::value(out.m)) / float((1 << bits) - 1));
    return out;
  }
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
  // The numbers of `count` values read(0..count): their least and greatest,
  // the first of equals kept (-0 and +0 included, as std::min / std::max).
  template <class Read>
  H2O_HD static Scale scale_of_range(int count, Read read, int bits) {
    float lo = read(0), hi = lo;
    for (int i = 1; i < count; ++i) {
      const float x = read(i);
      lo = x < lo ? x : lo;
      hi = hi < x ? x : hi;
    }
    return scale_of(lo, hi, bits);
  }
  // clamp(round_half_even((x - m) / s), 0, 2^bits - 1); 0 when s is 0 (a NaN gives 0).
  H2O_HD static uint32_t code_of(float x, Scale scale, int bits) {
    const float s = Half::value(scale.s);
    if (s == 0.0f) return 0u;
    const float q = rintf((x - Half::value(scale.m)) / s);  // half to even in the default rounding mode
    return uint32_t(fminf(fmaxf(q, 0.0f), float((1 << bits) - 1)));
  }
  // m + code * s in f32, one rounding (a fused multiply-add).
  H2O_HD static float read_back(uint32_t code, Scale scale) {
    return fmaf(float(code), Half::value(scale.s), Half::value(scale.m));
  }
};

}  // namespace h2o::kvq
