#pragma once
// The CPU's rows of a quantized KV cache: low_bit_layout.h's arithmetic
// (SEMANTICS.md, "KV precision": a group's minimum m and step s rounded to
// f16, round-half-even codes, planar packing) over whole rows and groups, and
// attention straight from the codes, vectorized for the host.
#include <cstdint>

#include "core/model/dtype.h"
#include "core/policy/low_bit_layout.h"

namespace h2o::kvq {

// The host's f16 rounding for low_bit_layout.h's arithmetic (nearest even).
struct HostHalf {
  static uint16_t bits(float x) { return f32_to_f16(x); }
  static float value(uint16_t h) { return f16_to_f32(h); }
};
// scale_of, scale_of_range, code_of and read_back, as the device computes them.
using HostMath = Math<HostHalf>;

// A row of n codes packed (low_bit_layout.h's planes), and unpacked.
void pack_row(const uint8_t* codes, int n, int bits, uint8_t* out);
void unpack_row(const uint8_t* packed, int n, int bits, uint8_t* codes);

// One f16 value as f32 (the F16C instruction where the build targets it).
float half_to_float(uint16_t h);
// out[0..n) = f32 of n f16 values.
void f16_to_f32_row(const uint16_t* in, int n, float* out);
// out[0..n) = f16 of n f32 values, rounded to nearest even.
void f32_to_f16_row(const float* in, int n, uint16_t* out);

// The quantization of one key group: G rows of n channels (row t at
// rows + t * n), per channel. Writes n scales and G packed rows (row_bytes each).
void quantize_key_group(const float* rows, int tokens, int n, int bits, Scale* scales, uint8_t* packed, int row_stride);
// The quantization of one value row of n channels, per run of `group` channels:
// writes n / group scales and its packed codes.
void quantize_value_row(const float* row, int n, int group, int bits, Scale* scales, uint8_t* packed);

// Read back one packed row of n codes under per-channel numbers widened to
// f32: a key row under its group's, a value row under widen_scales' of its runs.
void read_row(const uint8_t* packed, int n, int bits, const float* m, const float* s, float* out);
// A value row under the scales of its runs of `group` channels (what
// read_row gives with widen_scales' numbers, without widening them).
void read_value_row(const uint8_t* packed, int n, int group, int bits, const Scale* scales, float* out);
// Attention straight from codes, over `rows` consecutive packed rows
// (row_stride bytes apart). Keys: q . (m + code s) = (q o s) . code + q . m, so
// scores[i] = qs . (codes of row i) + qm with qs = q o s and qm = q . m of the
// rows' group. Values: p v = (p s) code + p m, so out += each row's probs[i]
// times its value read back, its runs' scales at scales[i * n / group ..].
void dot_code_rows(const uint8_t* packed, int row_stride, int rows, int n, int bits, const float* qs, float qm,
                   float* scores);
void add_value_rows(const uint8_t* packed, int row_stride, int rows, int n, int group, int bits, const Scale* scales,
                    const float* probs, float* out);
// m[c], s[c] of channel c < n from the scales of its run of `group` channels (scales[c / group]).
void widen_scales(const Scale* scales, int n, int group, float* m, float* s);

}  // namespace h2o::kvq
