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

// One term: `x` to codes (4 a word, element 4w + k in byte k of word w) and
// its scale. x / d, not x * (1 / d): the device and the host divide alike
// (IEEE division; nvcc is not given --use_fast_math).
H2O_HD float quantize_int8_term(const float (&x)[kInt8BlockElems], uint32_t (&codes)[kInt8BlockElems / 4]) {
  float amax = 0;
  for (int i = 0; i < kInt8BlockElems; ++i) {
    const float a = x[i] < 0 ? -x[i] : x[i];
    amax = a > amax ? a : amax;
  }
  const float d = amax / 127.0f;
  for (int w = 0; w < kInt8BlockElems / 4; ++w) {
    uint32_t word = 0;
    for (int k = 0; k < 4; ++k) {
      const float q = d > 0 ? rintf(x[4 * w + k] / d) : 0.0f;  // |q| <= 127 as |x| <= amax
      word |= uint32_t(uint8_t(int8_t(int(q)))) << (8 * k);
    }
    codes[w] = word;
  }
  return d;
}

// One block of 32 inputs to its two terms' codes and its Int8Block.
H2O_HD void quantize_int8_block(const float (&x)[kInt8BlockElems], uint32_t (&codes)[2][kInt8BlockElems / 4],
                                Int8Block& block) {
  block.d[0] = quantize_int8_term(x, codes[0]);
  float rest[kInt8BlockElems];
  block.sum[0] = block.sum[1] = 0;
  for (int i = 0; i < kInt8BlockElems; ++i) {
    const int q = int(int8_t(uint8_t(codes[0][i / 4] >> (8 * (i % 4)))));
    rest[i] = sub_rn(x[i], mul_rn(block.d[0], float(q)));
    block.sum[i / 16] += x[i];
  }
  block.d[1] = quantize_int8_term(rest, codes[1]);
}

}  // namespace H2O_KERN_NS
