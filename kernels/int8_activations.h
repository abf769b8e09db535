#pragma once
// The projections' inputs in 8 bits (`--precision native`'s integer path,
// matvec_quant.cu): each row of `in` f32 values becomes two terms of `in`
// signed 8-bit codes, x ~= d0 q0 + d1 q1 (the second term codes what the first
// missed, x - d0 q0), and per block of 32 one Int8Block: the two scales and
// the true f32 sums of the block's two halves. A weight format whose value is
// a * q_w - b (quant_blocks.h) then multiplies 16 or 32 elements as
//   sum w x ~= a (d0 sum(q_w q0) + d1 sum(q_w q1)) - b sum(x),
// integer dot products (__dp4a, four codes at a time) and the sum of x exact.
// One term (llama.cpp's q8_1) errs by up to half a step of d0: 0.1 nats a
// token on stories260K, where two are within 0.001 of the f32 inputs
// (tests/cuda/test_int8_path.cpp); the CPU backend splits its 8-bit rows the
// same way (core/cpu/cpu_weights.h). The second term costs a second dp4a per
// word and x bytes from L1, not weight bytes.
//
// Rounding (one rule, for the kernel and the tests' reference): d = amax /
// 127, q = round-to-nearest-even(x / d) in [-127, 127] (an all-zero block:
// d = 0, codes 0), for x and then for x - d0 q0, each product and difference
// rounded on its own (mul_rn, sub_rn: no FMA on either side).
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/model/quant_blocks.h"
#include "kernels/hd.h"
#include "kernels/namespaces.h"

namespace H2O_KERN_NS {

constexpr int kInt8BlockElems = 32;

struct alignas(16) Int8Block {
  float d[2] = {};    // the scales of the two terms' codes
  float sum[2] = {};  // sum of x over elements 0..15 and 16..31, in f32
};

// A step's rows of 8-bit inputs: the terms' codes [rows][in] each, blocks [rows][in / 32].
struct Int8Rows {
  int8_t* codes[2] = {};
  Int8Block* blocks = nullptr;
  int in = 0;  // elements a row (a multiple of 32)
};

// The device bytes of one term's codes for `rows` rows of `in` (on 16 bytes), and of everything.
H2O_HD size_t int8_codes_bytes(int rows, int in) { return (size_t(rows) * size_t(in) + 15) / 16 * 16; }
H2O_HD size_t int8_rows_bytes(int rows, int in) {
  return 2 * int8_codes_bytes(rows, in) + size_t(rows) * size_t(in / kInt8BlockElems) * sizeof(Int8Block);
}
// `rows` rows of `in` laid out in `bytes` (int8_rows_bytes of them): codes, residual codes, blocks.
H2O_HD Int8Rows int8_rows_at(void* bytes, int rows, int in) {
  Int8Rows out;
  out.codes[0] = static_cast<int8_t*>(bytes);
  out.codes[1] = out.codes[0] + int8_codes_bytes(rows, in);
  out.blocks = reinterpret_cast<Int8Block*>(out.codes[1] + int8_codes_bytes(rows, in));
  out.in = in;
  return out;
}

// The largest |v| of a block.
H2O_HD float int8_amax(const float* v) {
  float amax = 0;
  for (int i = 0; i < kInt8BlockElems; ++i) {
    const float a = v[i] < 0 ? -v[i] : v[i];
    amax = a > amax ? a : amax;
  }
  return amax;
}
// v's code for scale d: round-to-nearest-even(v / d), |code| <= 127 as |v| <= 127 d.
// v / d, not v * (1 / d): the device and the host divide alike (IEEE
// division; nvcc is not given --use_fast_math).
H2O_HD int int8_code(float v, float d) { return d > 0 ? int(rintf(v / d)) : 0; }
// What the first term leaves of x_i: x_i - d0 q0_i, rounded as written.
H2O_HD float int8_rest(float x, float d0) { return sub_rn(x, mul_rn(d0, float(int8_code(x, d0)))); }
H2O_HD uint32_t int8_byte(int code, int k) { return uint32_t(uint8_t(int8_t(code))) << (8 * k); }

// One block of 32 inputs at `x` to its two terms' codes, 8 words each at
// `codes0` and `codes1` (element 4w + k in byte k of word w), and its
// Int8Block. The block is read in passes (from L1 on the device), the first
// term's rest recomputed and each word stored as it is made, not held: the
// norms run this with up to 1024 threads a block, 64 registers a thread.
H2O_HD void quantize_int8_block(const float* x, uint32_t* codes0, uint32_t* codes1, Int8Block& block) {
  block.sum[0] = block.sum[1] = 0;
  for (int i = 0; i < kInt8BlockElems; ++i) block.sum[i / 16] += x[i];
  const float d0 = int8_amax(x) / 127.0f;
  float rest_amax = 0;
  for (int i = 0; i < kInt8BlockElems; ++i) {
    const float r = int8_rest(x[i], d0);
    const float a = r < 0 ? -r : r;
    rest_amax = a > rest_amax ? a : rest_amax;
  }
  const float d1 = rest_amax / 127.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int w = 0; w < kInt8BlockElems / 4; ++w) {
    uint32_t word0 = 0, word1 = 0;
    for (int k = 0; k < 4; ++k) {
      const float v = x[4 * w + k];
      word0 |= int8_byte(int8_code(v, d0), k);
      word1 |= int8_byte(int8_code(int8_rest(v, d0), d1), k);
    }
    codes0[w] = word0;
    codes1[w] = word1;
  }
  block.d[0] = d0;
  block.d[1] = d1;
}

}  // namespace H2O_KERN_NS
