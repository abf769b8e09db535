// GGUF quantised weight types (core/model/quant.h) and their CPU
// matrix-vector kernels (core/cpu/quant_matvec.h):
//  * the type table against ggml's ids, block sizes and byte sizes;
//  * blocks written byte by byte from the public layout, dequantised, and
//    compared with values worked out by hand in the comments;
//  * quantise -> dequantise round trips within a bound per type;
//  * every kernel path this CPU can run (portable, AVX2, AVX-512, each forced)
//    against a float64 dot product, with tolerances derived below.
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/base/thread_pool.h"
#include "core/cpu/cpu_weights.h"
#include "core/cpu/quant_matvec.h"
#include "core/model/dtype.h"
#include "core/base/error.h"
#include "core/model/quant.h"

using namespace h2o;
using cpu::Isa;

namespace {

const Isa kIsas[] = {Isa::Portable, Isa::Avx2, Isa::Avx512};
const QuantType kQuantised[] = {QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0, QuantType::Q5_1,
                                QuantType::Q8_0, QuantType::Q2_K, QuantType::Q3_K, QuantType::Q4_K,
                                QuantType::Q5_K, QuantType::Q6_K};

std::vector<float> dequant(QuantType t, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(t, bytes.data(), y.data(), n);
  return y;
}

template <class Block>
std::vector<uint8_t> bytes_of(const Block& b) {
  std::vector<uint8_t> v(sizeof b);
  std::memcpy(v.data(), &b, sizeof b);
  return v;
}

// Expects `fn` to throw h2o::Error with a one-line message containing `needle`.
template <class Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning " << needle;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

std::vector<float> gaussian(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = g(rng);
  return v;
}

}  // namespace

// ---- type table ---------------------------------------------------------------------

TEST(QuantTypes, IdsNamesAndBlockSizesAreGgmls) {
  struct Row {
    QuantType t;
    uint32_t id;
    const char* name;
    int block;
    size_t bytes;
  };
  // ggml.h ids; ggml-common.h block sizes and sizeof(block_*).
  const Row rows[] = {{QuantType::F32, 0, "F32", 1, 4},       {QuantType::F16, 1, "F16", 1, 2},
                      {QuantType::Q4_0, 2, "Q4_0", 32, 18},   {QuantType::Q4_1, 3, "Q4_1", 32, 20},
                      {QuantType::Q5_0, 6, "Q5_0", 32, 22},   {QuantType::Q5_1, 7, "Q5_1", 32, 24},
                      {QuantType::Q8_0, 8, "Q8_0", 32, 34},   {QuantType::Q2_K, 10, "Q2_K", 256, 84},
                      {QuantType::Q3_K, 11, "Q3_K", 256, 110}, {QuantType::Q4_K, 12, "Q4_K", 256, 144},
                      {QuantType::Q5_K, 13, "Q5_K", 256, 176}, {QuantType::Q6_K, 14, "Q6_K", 256, 210},
                      {QuantType::BF16, 30, "BF16", 1, 2}};
  ASSERT_EQ(std::size(rows), kAllQuantTypes.size());
  for (const Row& r : rows) {
    EXPECT_EQ(uint32_t(r.t), r.id);
    EXPECT_EQ(quant_type_from_id(r.id), r.t);
    EXPECT_STREQ(quant_type_name(r.t), r.name);
    EXPECT_EQ(quant_type_from_name(r.name), r.t);
    EXPECT_EQ(block_size(r.t), r.block) << r.name;
    EXPECT_EQ(block_bytes(r.t), r.bytes) << r.name;
  }
  // Removed (Q4_2 = 4), intermediate-only (Q8_K = 15) and IQ types are not ours.
  for (uint32_t id : {4u, 5u, 9u, 15u, 16u, 23u, 29u, 31u, 1000u}) EXPECT_FALSE(quant_type_from_id(id)) << id;
  EXPECT_FALSE(quant_type_from_name("q4_k"));
}

TEST(QuantTypes, RowBytes) {
  EXPECT_EQ(row_bytes(QuantType::Q4_K, 4096), 16u * 144);
  EXPECT_EQ(row_bytes(QuantType::Q8_0, 768), 24u * 34);
  EXPECT_EQ(row_bytes(QuantType::Q6_K, 5632), 22u * 210);
  EXPECT_EQ(row_bytes(QuantType::F16, 7), 14u);
  EXPECT_EQ(row_bytes(QuantType::Q5_0, 0), 0u);
}

TEST(QuantTypes, BadRowLengthIsOneErrorLine) {
  expect_error([] { row_bytes(QuantType::Q4_K, 100); }, "Q4_K row of 100 elements");
  expect_error([] { row_bytes(QuantType::Q8_0, 33); }, "block of 32");
  expect_error([] { row_bytes(QuantType::Q6_K, 288); }, "block of 256");  // a multiple of 32, not of 256
  expect_error([] { row_bytes(QuantType::F32, -1); }, "F32 row of -1 elements");
  std::vector<float> y(300);
  std::vector<uint8_t> buf(4096);
  expect_error([&] { dequantize_row(QuantType::Q2_K, buf.data(), y.data(), 300); }, "Q2_K row of 300");
  expect_error([&] { quantize_row(QuantType::Q5_1, y.data(), buf.data(), 48); }, "Q5_1 row of 48");
}

// ---- blocks built by hand from the ggml-common.h layouts -------------------------------

TEST(QuantBlocks, F16AndBF16) {
  const uint16_t h[] = {0x3C00, 0xC000, 0x0001, 0x7C00, 0x3555};
  std::vector<uint8_t> b(sizeof h);
  std::memcpy(b.data(), h, sizeof h);
  const auto y = dequant(QuantType::F16, b, 5);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -24));  // smallest subnormal half
  EXPECT_TRUE(std::isinf(y[3]));
  EXPECT_EQ(y[4], 0.333251953125f);  // exponent 13, mantissa 341: (1 + 341/1024) * 2^-2
  const uint16_t bf[] = {0x3F80, 0xC040};
  std::memcpy(b.data(), bf, sizeof bf);
  const auto z = dequant(QuantType::BF16, b, 2);
  EXPECT_EQ(z[0], 1.0f);
  EXPECT_EQ(z[1], -3.0f);
}

TEST(QuantBlocks, Q8_0) {
  BlockQ8_0 b;
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 32; ++i) b.qs[i] = int8_t(i - 16);
  b.qs[5] = -128;
  const auto y = dequant(QuantType::Q8_0, bytes_of(b), 32);
  EXPECT_EQ(y[0], -8.0f);   // 0.5 * -16
  EXPECT_EQ(y[16], 0.0f);
  EXPECT_EQ(y[31], 7.5f);   // 0.5 * 15
  EXPECT_EQ(y[5], -64.0f);  // 0.5 * -128: files may hold -128
}

TEST(QuantBlocks, Q4_0) {
  BlockQ4_0 b;
  b.d = 0x4000;  // 2.0
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
  const auto y = dequant(QuantType::Q4_0, bytes_of(b), 32);
  EXPECT_EQ(y[0], -16.0f);  // (0 - 8) * 2: low nibble of byte 0
  EXPECT_EQ(y[15], 14.0f);  // (15 - 8) * 2
  EXPECT_EQ(y[16], 14.0f);  // high nibble of byte 0: (15 - 8) * 2
  EXPECT_EQ(y[31], -16.0f);
  EXPECT_EQ(y[9], 2.0f);    // (9 - 8) * 2
}

TEST(QuantBlocks, Q4_1) {
  BlockQ4_1 b;
  b.d = 0x3C00;  // 1.0
  b.m = 0xC000;  // -2.0
  for (int j = 0; j < 16; ++j) b.qs[j] = 0x5A;
  b.qs[3] = 0xF0;
  const auto y = dequant(QuantType::Q4_1, bytes_of(b), 32);
  EXPECT_EQ(y[0], 8.0f);    // 10 * 1 - 2
  EXPECT_EQ(y[16], 3.0f);   // 5 * 1 - 2
  EXPECT_EQ(y[3], -2.0f);   // 0 - 2
  EXPECT_EQ(y[19], 13.0f);  // 15 - 2
}

TEST(QuantBlocks, Q5_0) {
  BlockQ5_0 b{};
  b.d = 0x3C00;  // 1.0
  const uint32_t qh = 0x80000001u;  // fifth bit of elements 0 and 31
  std::memcpy(b.qh, &qh, 4);
  b.qs[0] = 0x03;
  b.qs[15] = 0xF0;
  const auto y = dequant(QuantType::Q5_0, bytes_of(b), 32);
  EXPECT_EQ(y[0], 3.0f);    // (3 | 16) - 16
  EXPECT_EQ(y[31], 15.0f);  // (15 | 16) - 16: high nibble of byte 15
  EXPECT_EQ(y[16], -16.0f); // 0 - 16
  EXPECT_EQ(y[15], -16.0f); // low nibble of byte 15 is 0, no fifth bit
}

TEST(QuantBlocks, Q5_1) {
  BlockQ5_1 b{};
  b.d = 0x3800;  // 0.5
  b.m = 0x3C00;  // 1.0
  b.qh[0] = 1 << 5;  // fifth bit of element 5
  b.qh[2] = 1 << 5;  // bit 21: element 21
  b.qs[5] = 0x21;
  const auto y = dequant(QuantType::Q5_1, bytes_of(b), 32);
  EXPECT_EQ(y[5], 9.5f);   // (1 | 16) * 0.5 + 1
  EXPECT_EQ(y[21], 10.0f); // (2 | 16) * 0.5 + 1
  EXPECT_EQ(y[0], 1.0f);
}

TEST(QuantBlocks, Q2_K) {
  BlockQ2_K b{};
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  b.qs[0] = 0xE4;   // 11 10 01 00: elements 0, 32, 64, 96 get codes 0, 1, 2, 3
  b.scales[0] = 0x21;  // elements 0-15: scale 1, min 2
  b.scales[2] = 0x12;  // elements 32-47: scale 2, min 1
  b.scales[4] = 0x03;  // 64-79: scale 3, min 0
  b.scales[6] = 0xF1;  // 96-111: scale 1, min 15
  b.qs[48] = 0x03;     // element 128 + 16 = 144, code 3
  b.scales[9] = 0x25;  // 144-159: scale 5, min 2
  const auto y = dequant(QuantType::Q2_K, bytes_of(b), 256);
  EXPECT_EQ(y[0], -1.0f);    // 1*1*0 - 0.5*2
  EXPECT_EQ(y[32], 1.5f);    // 1*2*1 - 0.5*1
  EXPECT_EQ(y[64], 6.0f);    // 1*3*2 - 0
  EXPECT_EQ(y[96], -4.5f);   // 1*1*3 - 0.5*15
  EXPECT_EQ(y[144], 14.0f);  // 1*5*3 - 0.5*2
  EXPECT_EQ(y[1], -1.0f);    // code 0 in sub-block 0
  EXPECT_EQ(y[200], 0.0f);
}

TEST(QuantBlocks, Q3_K) {
  BlockQ3_K b{};
  b.d = 0x3C00;  // 1.0
  // Stored 6-bit scales u = s + 32: every u = 32 (s = 0, top bits 10 in bytes
  // 8-11) except u0 = 33 (s = 1: low nibble 1 in byte 0) and u9 = 28 (s = -4:
  // low nibble 12 in the high nibble of byte 1, top bits 01 at bits 4-5 of byte 9).
  const uint8_t scales[12] = {0x01, 0xC0, 0, 0, 0, 0, 0, 0, 0xAA, 0x9A, 0xAA, 0xAA};
  std::memcpy(b.scales, scales, 12);
  EXPECT_EQ(q3k_scale(b.scales, 0), 1);
  EXPECT_EQ(q3k_scale(b.scales, 9), -4);
  EXPECT_EQ(q3k_scale(b.scales, 5), 0);
  b.qs[0] = 0x02;      // element 0: low bits 2
  b.hmask[0] = 0x01;   // high bit set: q = 2
  b.qs[1] = 0x01;      // element 1: low bits 1, high bit clear: q = 1 - 4
  b.qs[48] = 0x03;     // element 144 (n 1, j 0, p 16): low bits 3
  b.hmask[16] = 0x10;  // bit 4n + j = 4 set: q = 3
  const auto y = dequant(QuantType::Q3_K, bytes_of(b), 256);
  EXPECT_EQ(y[0], 2.0f);     // 1 * 1 * 2
  EXPECT_EQ(y[1], -3.0f);    // 1 * 1 * (1 - 4)
  EXPECT_EQ(y[144], -12.0f); // 1 * -4 * 3
  EXPECT_EQ(y[145], 16.0f);  // 1 * -4 * (0 - 4)
  EXPECT_EQ(y[100], 0.0f);   // scale 0
}

TEST(QuantBlocks, Q4_K) {
  BlockQ4_K b{};
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  // Sub-block 0: scale 10, min 4 (bytes 0 and 4). Sub-block 5: scale 37 =
  // 10 0101b, min 50 = 11 0010b: top bits in bits 6-7 of bytes 1 and 5, low
  // nibbles in byte 9 (scale low, min high).
  b.scales[0] = 10;
  b.scales[4] = 4;
  b.scales[1] = 0x80;
  b.scales[5] = 0xC0;
  b.scales[9] = 0x25;
  uint8_t sc, m;
  k4_scale_min(b.scales, 5, &sc, &m);
  EXPECT_EQ(sc, 37);
  EXPECT_EQ(m, 50);
  b.qs[0] = 0x07;     // element 0: low nibble 7
  b.qs[67] = 0xB0;    // element 64*2 + 32 + 3 = 163 (high nibble, sub-block 5): 11
  const auto y = dequant(QuantType::Q4_K, bytes_of(b), 256);
  EXPECT_EQ(y[0], 68.0f);    // 1*10*7 - 0.5*4
  EXPECT_EQ(y[1], -2.0f);    // code 0
  EXPECT_EQ(y[163], 382.0f); // 1*37*11 - 0.5*50
  EXPECT_EQ(y[131], 0.0f);   // sub-block 4: scale 0, min 0
}

TEST(QuantBlocks, Q5_K) {
  BlockQ5_K b{};
  b.d = 0x4000;     // 2.0
  b.dmin = 0x3C00;  // 1.0
  b.scales[0] = 3;  // sub-block 0: scale 3
  b.scales[4] = 1;  //              min 1
  b.scales[1] = 2;  // sub-block 1: scale 2, min 0
  b.scales[10] = 0x01;  // sub-block 6: scale low nibble 1 ...
  b.scales[2] = 0x40;   // ... top bits 01: scale 17
  b.qs[0] = 0x05;   // element 0: low nibble 5; element 32: high nibble 0
  b.qh[0] = 0x03;   // fifth bits: element 0 (bit 0) and element 32 (bit 1)
  b.qs[101] = 0x0F; // element 64*3 + 5 = 197: low nibble 15
  b.qh[5] = 0x40;   // bit 2*3 of qh[5]: fifth bit of element 197
  const auto y = dequant(QuantType::Q5_K, bytes_of(b), 256);
  EXPECT_EQ(y[0], 125.0f);   // 2*3*(5+16) - 1*1
  EXPECT_EQ(y[32], 64.0f);   // 2*2*(0+16) - 0
  EXPECT_EQ(y[197], 1054.0f);// 2*17*31
  EXPECT_EQ(y[1], -1.0f);    // 2*3*0 - 1
}

TEST(QuantBlocks, Q6_K) {
  BlockQ6_K b{};
  b.d = 0x3C00;  // 1.0
  b.scales[0] = 2;
  b.scales[15] = -3;
  b.ql[0] = 0x05;   // element 0: low 4 bits 5
  b.qh[0] = 0x02;   // bits 0-1 of qh[0]: 2 -> q = 5 + 32 - 32
  b.ql[127] = 0xA0; // element 255 (n 1, j 3, p 31): high nibble of ql[64 + 32 + 31] = 10
  b.qh[63] = 0x40;  // bits 6-7 of qh[32 + 31] = 01 -> q = 10 + 16 - 32 = -6
  const auto y = dequant(QuantType::Q6_K, bytes_of(b), 256);
  EXPECT_EQ(y[0], 10.0f);    // 1 * 2 * 5
  EXPECT_EQ(y[1], -64.0f);   // 1 * 2 * (0 - 32)
  EXPECT_EQ(y[255], 18.0f);  // 1 * -3 * -6
  EXPECT_EQ(y[100], 0.0f);   // scale 0
}

// ---- round trips ----------------------------------------------------------------------------

// Legacy types: every element within the rounding bound of its block's stored
// scale. Q8_0: d / 2. Q4_0/Q5_0: the positive extreme of the range is one
// step short (codes -8..7), so up to d. Q4_1/Q5_1: d / 2 plus the rounding of
// the stored min to half precision (2^-11 relative).
TEST(QuantRoundTrip, LegacyTypesWithinTheirStep) {
  const int64_t n = 4096;
  auto x = gaussian(n, 11);
  for (int i = 0; i < 32; ++i) x[i] = 0;             // an all-zero block
  for (int i = 32; i < 64; ++i) x[i] = 3.25f;        // a constant block
  x[100] = 40.0f;                                    // an outlier
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_0, QuantType::Q5_0, QuantType::Q4_1, QuantType::Q5_1}) {
    std::vector<uint8_t> q(row_bytes(t, n));
    quantize_row(t, x.data(), q.data(), n);
    const auto y = dequant(t, q, n);
    const size_t bb = block_bytes(t);
    for (int64_t b = 0; b < n / 32; ++b) {
      uint16_t dh, mh = 0;
      std::memcpy(&dh, q.data() + b * bb, 2);
      if (t == QuantType::Q4_1 || t == QuantType::Q5_1) std::memcpy(&mh, q.data() + b * bb + 2, 2);
      const float d = std::fabs(f16_to_f32(dh)), m = std::fabs(f16_to_f32(mh));
      const float bound = t == QuantType::Q8_0                          ? 0.5f * d
                          : (t == QuantType::Q4_0 || t == QuantType::Q5_0) ? d
                                                                         : 0.5f * d + m * 0x1p-10f;
      for (int i = 0; i < 32; ++i) {
        const int64_t k = 32 * b + i;
        ASSERT_LE(std::fabs(y[k] - x[k]), bound * 1.0001f + 1e-7f) << quant_type_name(t) << " element " << k;
      }
    }
    for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.0f) << quant_type_name(t);
    for (int i = 32; i < 64; ++i) EXPECT_NEAR(y[i], 3.25f, 3.25f * 0x1p-10f) << quant_type_name(t);
  }
}

// K-quants have no per-element bound (the scale search may clip an outlier
// when that lowers the block's squared error), so the check is on the RMS
// error of Gaussian weights relative to their RMS. A uniform quantiser with
// step D has RMS error D / sqrt(12); a sub-block of 16 or 32 Gaussians spans
// about 4 to 5 sigma, so D ~ 4.5 / (levels - 1) and the expected relative RMS
// error is about 1.3 / (levels - 1): Q2_K 0.43, Q3_K 0.19, Q4_K 0.087, Q5_K
// 0.042, Q6_K 0.021. The scale search does better than that; the bounds below
// are those estimates, and each must also beat the type with one bit less.
TEST(QuantRoundTrip, KQuantsRmsErrorWithinTheirBits) {
  const int64_t n = 256 * 64;
  const auto x = gaussian(n, 12, 0.02f);
  double ref = 0;
  for (float v : x) ref += double(v) * v;
  ref = std::sqrt(ref / n);
  const struct {
    QuantType t;
    double bound;
  } cases[] = {{QuantType::Q2_K, 0.43}, {QuantType::Q3_K, 0.19}, {QuantType::Q4_K, 0.087},
               {QuantType::Q5_K, 0.042}, {QuantType::Q6_K, 0.021}};
  double previous = 1e9;
  for (const auto& c : cases) {
    std::vector<uint8_t> q(row_bytes(c.t, n));
    quantize_row(c.t, x.data(), q.data(), n);
    const auto y = dequant(c.t, q, n);
    double err = 0, worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = double(y[i]) - x[i];
      err += e * e;
      worst = std::max(worst, std::fabs(e));
    }
    const double rel = std::sqrt(err / n) / ref;
    EXPECT_LT(rel, c.bound) << quant_type_name(c.t);
    EXPECT_LT(rel, previous) << quant_type_name(c.t) << " is no better than the type with a bit less";
    // Nothing wildly off: a step is about sqrt(12) * bound * ref; allow four.
    EXPECT_LT(worst, 14 * c.bound * ref) << quant_type_name(c.t);
    std::printf("%s: relative RMS error %.4f, worst %.2f steps\n", quant_type_name(c.t), rel, worst / (3.46 * c.bound * ref));
    previous = rel;
  }
}

// Blocks that are all zero, constant, or all negative come back exactly (or
// within half-precision rounding of the stored scale) in every type.
TEST(QuantRoundTrip, DegenerateBlocks) {
  for (QuantType t : kQuantised) {
    const int64_t n = 256;
    for (float c : {0.0f, -1.5f, 0.75f}) {
      std::vector<float> x(n, c);
      std::vector<uint8_t> q(row_bytes(t, n));
      quantize_row(t, x.data(), q.data(), n);
      const auto y = dequant(t, q, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], c, std::fabs(c) * 0x1p-9f) << quant_type_name(t) << " " << c;
    }
  }
}

TEST(QuantRoundTrip, FloatTypes) {
  const auto x = gaussian(1000, 13);
  for (QuantType t : {QuantType::F32, QuantType::F16, QuantType::BF16}) {
    std::vector<uint8_t> q(row_bytes(t, 1000));
    quantize_row(t, x.data(), q.data(), 1000);
    const auto y = dequant(t, q, 1000);
    const float rel = t == QuantType::F32 ? 0 : t == QuantType::F16 ? 0x1p-11f : 0x1p-8f;  // half an ulp
    for (int i = 0; i < 1000; ++i) ASSERT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * rel) << quant_type_name(t);
  }
}

// ---- kernels ------------------------------------------------------------------------------

namespace {

bool skip_isa(Isa isa) { return !cpu::isa_supported(isa); }

// A weight matrix in type t, its dequantised values, and random activations.
struct Problem {
  QuantType t;
  int64_t rows, cols;
  int n_x;
  std::vector<uint8_t> w;
  std::vector<float> wf;  // dequantised, rows * cols
  std::vector<float> x;   // n_x * cols

  Problem(QuantType type, int64_t r, int64_t c, int nx, uint64_t seed) : t(type), rows(r), cols(c), n_x(nx) {
    const auto src = gaussian(size_t(r * c), seed, 0.05f);
    const size_t rb = row_bytes(t, c);
    w.resize(rb * size_t(r));
    wf.resize(size_t(r * c));
    for (int64_t o = 0; o < r; ++o) {
      quantize_row(t, src.data() + o * c, w.data() + o * rb, c);
      dequantize_row(t, w.data() + o * rb, wf.data() + o * c, c);
    }
    x = gaussian(size_t(nx * c), seed + 1);
    x[0] = 6.0f;  // an outlier: coarsens its activation block
  }
};

// |kernel - exact| where exact uses the activations the kernel was given
// (QuantizedActs::value): only float rounding separates them. Each block or
// super-block sum is an exact integer; it is rounded to float (2^-24), scaled
// by products of two or three floats (2^-24 each), and accumulated in at most
// cols / 32 + 16 partial sums, each addition another 2^-24 of at most
// sum |w x|. So |error| <= (cols / 32 + 24) * 2^-24 * sum |w x|; the 2x
// covers dequantize_row's own rounding of the reference weights.
double rounding_bound(int64_t cols, double sum_abs) { return 2.0 * double(cols / 32 + 24) * 0x1p-24 * sum_abs; }

void check_kernel(const Problem& p, Isa isa) {
  SCOPED_TRACE(std::string(quant_type_name(p.t)) + " " + cpu::isa_name(isa) + " " + std::to_string(p.rows) + "x" +
               std::to_string(p.cols) + " batch " + std::to_string(p.n_x));
  cpu::QuantizedActs acts;
  acts.prepare(p.t, p.x.data(), p.n_x, p.cols);
  std::vector<float> out(size_t(p.n_x * p.rows), NAN);
  cpu::matvec_rows(p.t, p.w.data(), p.cols, 0, p.rows, acts, out.data(), p.rows, isa);
  for (int t = 0; t < p.n_x; ++t)
    for (int64_t o = 0; o < p.rows; ++o) {
      double exact_q = 0, exact_f = 0, abs_q = 0, act_bound = 0;
      for (int64_t i = 0; i < p.cols; ++i) {
        const double wv = p.wf[size_t(o * p.cols + i)], xq = acts.value(t, i);
        exact_q += wv * xq;
        exact_f += wv * p.x[size_t(t * p.cols + i)];
        abs_q += std::fabs(wv * xq);
        act_bound += std::fabs(wv) * acts.scale(t, i) * 0.5;
      }
      const double got = out[size_t(t * p.rows + o)];
      const double tol = rounding_bound(p.cols, abs_q);
      ASSERT_NEAR(got, exact_q, tol) << "row " << o << " x " << t;
      // Against the float32 activations: the 8-bit rounding of x adds at most
      // sum |w| * d / 2 (zero for the float types).
      ASSERT_NEAR(got, exact_f, tol + act_bound * 1.0001 + 1e-9) << "row " << o << " x " << t;
    }
}

}  // namespace

class QuantKernels : public ::testing::TestWithParam<Isa> {};

TEST_P(QuantKernels, EveryTypeAgainstFloat64) {
  const Isa isa = GetParam();
  if (skip_isa(isa)) GTEST_SKIP() << cpu::isa_name(isa) << " not supported by this CPU";
  uint64_t seed = 100;
  for (QuantType t : kAllQuantTypes) {
    const int b = std::max(32, block_size(t));
    // Lengths: one block, an odd number of 32-blocks (the AVX-512 pair loop's
    // tail), stories110M's 768 and 2048, and a longer row.
    std::vector<int64_t> lengths = {int64_t(b), 3 * int64_t(b), 768, 2048, 5632};
    if (b == 1) lengths = {7, 33, 100, 768, 2048};  // float types take any length
    if (b == 32) lengths.push_back(96);
    // Batches: the kernels take up to four activation rows per pass over a
    // weight row, eight in the 8-bit formats (quant_rows.h): one row, a group
    // of three, six (4 + 2, or one group), eight (4 + 4, or one) and nine
    // (4 + 4 + 1, or 8 + 1).
    for (int64_t cols : lengths)
      for (int n_x : {1, 3, 6, 8, 9}) check_kernel(Problem(t, 5, cols, n_x, seed++), isa);
  }
}

// Every SIMD path gives the portable path's numbers up to summation order.
TEST_P(QuantKernels, MatchesPortable) {
  const Isa isa = GetParam();
  if (isa == Isa::Portable) GTEST_SKIP() << "the reference itself";
  if (skip_isa(isa)) GTEST_SKIP() << cpu::isa_name(isa) << " not supported by this CPU";
  for (QuantType t : kAllQuantTypes) {
    const int64_t cols = block_size(t) == 256 ? 1024 : 800 - (block_size(t) == 1 ? 3 : 0);
    Problem p(t, 9, cols, 2, 7);
    std::vector<float> ref(18), got(18);
    cpu::matvec(t, p.w.data(), p.rows, p.cols, p.x.data(), p.n_x, ref.data(), Isa::Portable);
    cpu::matvec(t, p.w.data(), p.rows, p.cols, p.x.data(), p.n_x, got.data(), isa);
    cpu::QuantizedActs acts;
    acts.prepare(t, p.x.data(), p.n_x, p.cols);
    for (int k = 0; k < 18; ++k) {
      double abs_q = 0;
      for (int64_t i = 0; i < cols; ++i) abs_q += std::fabs(double(p.wf[size_t((k % 9) * cols + i)]) * acts.value(k / 9, i));
      EXPECT_NEAR(got[k], ref[k], rounding_bound(cols, abs_q)) << quant_type_name(t) << " output " << k;
    }
  }
}

// Extreme codes everywhere with the largest activations, read as 16 bits
// (Q8_0, Q6_K): the products and int32 lane sums reach their largest (-128
// weights; Q6_K's q = 31 and q = -32 under scale -128, where every lane sums
// 16 products of 4096 * 32767 of one sign) and must not overflow.
TEST_P(QuantKernels, ExtremeCodesDoNotSaturate) {
  const Isa isa = GetParam();
  if (skip_isa(isa)) GTEST_SKIP() << cpu::isa_name(isa) << " not supported by this CPU";
  const int64_t cols = 512;
  std::vector<float> x(cols);
  for (int64_t i = 0; i < cols; ++i) x[i] = (i % 3 == 0) ? -1.0f : 1.0f;
  {  // Q8_0, every weight -128 (ggml's quantiser never writes it, files may hold it)
    std::vector<BlockQ8_0> w(cols / 32);
    for (auto& b : w) {
      b.d = 0x3C00;
      std::memset(b.qs, 0x80, 32);
    }
    float out = 0;
    cpu::matvec(QuantType::Q8_0, w.data(), 1, cols, x.data(), 1, &out, isa);
    double exact = 0;
    for (int64_t i = 0; i < cols; ++i) exact += -128.0 * x[i];
    EXPECT_NEAR(out, exact, 1e-3) << cpu::isa_name(isa);
  }
  {  // Q6_K, every code 63 (q = 31) and scale -128
    std::vector<BlockQ6_K> w(cols / 256);
    for (auto& b : w) {
      b.d = 0x3C00;
      std::memset(b.ql, 0xFF, sizeof b.ql);
      std::memset(b.qh, 0xFF, sizeof b.qh);
      std::memset(b.scales, 0x80, sizeof b.scales);
    }
    float out = 0;
    cpu::matvec(QuantType::Q6_K, w.data(), 1, cols, x.data(), 1, &out, isa);
    double exact = 0;
    for (int64_t i = 0; i < cols; ++i) exact += -128.0 * 31 * x[i];
    EXPECT_NEAR(out, exact, 1e-6 * std::fabs(exact) + 1e-3) << cpu::isa_name(isa);
  }
  {  // Q6_K, every code 0 (q = -32) and scale -128, every activation 1: every product is +4096 * 32767
    std::vector<BlockQ6_K> w(cols / 256);
    for (auto& b : w) {
      b.d = 0x3C00;
      std::memset(b.ql, 0, sizeof b.ql);
      std::memset(b.qh, 0, sizeof b.qh);
      std::memset(b.scales, 0x80, sizeof b.scales);
    }
    const std::vector<float> ones(cols, 1.0f);
    float out = 0;
    cpu::matvec(QuantType::Q6_K, w.data(), 1, cols, ones.data(), 1, &out, isa);
    const double exact = 4096.0 * double(cols);
    EXPECT_NEAR(out, exact, 1e-6 * exact) << cpu::isa_name(isa);
  }
}

// A row range writes its rows only, at out_stride per activation row.
TEST_P(QuantKernels, RowRangeWritesOnlyItsRows) {
  const Isa isa = GetParam();
  if (skip_isa(isa)) GTEST_SKIP() << cpu::isa_name(isa) << " not supported by this CPU";
  Problem p(QuantType::Q4_K, 10, 512, 2, 21);
  cpu::QuantizedActs acts;
  acts.prepare(p.t, p.x.data(), p.n_x, p.cols);
  std::vector<float> full(20), part(20, -7.0f);
  cpu::matvec_rows(p.t, p.w.data(), p.cols, 0, 10, acts, full.data(), 10, isa);
  cpu::matvec_rows(p.t, p.w.data(), p.cols, 3, 7, acts, part.data(), 10, isa);
  for (int t = 0; t < 2; ++t)
    for (int o = 0; o < 10; ++o) {
      if (o >= 3 && o < 7)
        EXPECT_EQ(part[t * 10 + o], full[t * 10 + o]) << o;
      else
        EXPECT_EQ(part[t * 10 + o], -7.0f) << o;
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, QuantKernels, ::testing::ValuesIn(kIsas),
                         [](const auto& info) { return std::string(cpu::isa_name(info.param)); });

// ---- row tiles ----------------------------------------------------------------------------

// Tiles of 16 rows against the row kernels on the same activations: the same
// integer sums per block, so only float rounding differs; for every count of
// activation rows the kernels group (1 to 6).
TEST(QuantTiles, MatchTheRowKernels) {
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_K, QuantType::Q6_K}) {
    if (!cpu::tiles_available(t)) GTEST_SKIP() << "no tile kernel on this CPU (AVX-512 VNNI)";
    for (int n_x = 1; n_x <= 6; ++n_x) {
      Problem p(t, 48, 512, n_x, 50 + uint64_t(n_x));
      const std::vector<uint8_t> tiles = cpu::make_tiles(p.t, p.w.data(), p.rows, p.cols);
      ASSERT_EQ(tiles.size(), 3 * cpu::tile_bytes(p.t, p.cols));
      cpu::QuantizedActs acts;
      acts.prepare(p.t, p.x.data(), n_x, p.cols);
      std::vector<float> ref(size_t(n_x * p.rows)), got(ref.size(), NAN);
      cpu::matvec_rows(p.t, p.w.data(), p.cols, 0, p.rows, acts, ref.data(), p.rows);
      cpu::matvec_tiles(p.t, tiles.data(), p.cols, 0, 1, acts, got.data(), p.rows);  // two calls: any tile range
      cpu::matvec_tiles(p.t, tiles.data(), p.cols, 1, 3, acts, got.data(), p.rows);
      for (size_t k = 0; k < ref.size(); ++k) {
        double abs_q = 0;
        for (int64_t i = 0; i < p.cols; ++i)
          abs_q += std::fabs(double(p.wf[size_t(int64_t(k) % p.rows * p.cols + i)]) * acts.value(int(int64_t(k) / p.rows), i));
        EXPECT_NEAR(got[k], ref[k], rounding_bound(p.cols, abs_q))
            << quant_type_name(t) << " n_x " << n_x << " output " << k;
      }
    }
  }
}

// The largest sums a tile holds exactly: weights -128 (files may hold them)
// against activations at +-32767 of one sign per product.
TEST(QuantTiles, ExtremeWeightsAndActivationsStayExact) {
  if (!cpu::tiles_available(QuantType::Q8_0) || !cpu::tiles_available(QuantType::Q4_K) ||
      !cpu::tiles_available(QuantType::Q6_K))
    GTEST_SKIP() << "no tile kernel on this CPU (AVX-512 VNNI)";
  const int64_t cols = 256;
  std::vector<BlockQ8_0> w(16 * cols / 32);
  for (auto& b : w) {
    b.d = 0x3C00;
    std::memset(b.qs, 0x80, 32);
  }
  std::vector<float> x(cols);
  for (int64_t i = 0; i < cols; ++i) x[i] = (i % 3 == 0) ? -1.0f : 1.0f;
  const auto tiles = cpu::make_tiles(QuantType::Q8_0, w.data(), 16, cols);
  cpu::QuantizedActs acts;
  acts.prepare(QuantType::Q8_0, x.data(), 1, cols);
  std::vector<float> out(16);
  cpu::matvec_tiles(QuantType::Q8_0, tiles.data(), cols, 0, 1, acts, out.data(), 16);
  double exact = 0;
  for (int64_t i = 0; i < cols; ++i) exact += -128.0 * x[i];
  for (float o : out) EXPECT_NEAR(o, exact, 1e-3);

  // Q4_K: every code 15, scale and min 63, activations of one sign: the largest sub-block sums.
  std::vector<BlockQ4_K> k4(16 * cols / 256);
  for (auto& b : k4) {
    b.d = 0x3C00;     // 1
    b.dmin = 0x3800;  // 0.5
    std::memset(b.scales, 0xFF, sizeof b.scales);
    std::memset(b.qs, 0xFF, sizeof b.qs);
  }
  const std::vector<float> ones(cols, 1.0f);
  const auto k4_tiles = cpu::make_tiles(QuantType::Q4_K, k4.data(), 16, cols);
  acts.prepare(QuantType::Q4_K, ones.data(), 1, cols);
  cpu::matvec_tiles(QuantType::Q4_K, k4_tiles.data(), cols, 0, 1, acts, out.data(), 16);
  const double k4_exact = (63.0 * 15 - 0.5 * 63) * double(cols);
  for (float o : out) EXPECT_NEAR(o, k4_exact, 1e-5 * k4_exact);

  // Q6_K: every code 0 (q = -32) under scale -128, activations of one sign: the largest sub-block sums.
  std::vector<BlockQ6_K> k6(16 * cols / 256);
  for (auto& b : k6) {
    b.d = 0x3C00;
    std::memset(b.ql, 0, sizeof b.ql);
    std::memset(b.qh, 0, sizeof b.qh);
    std::memset(b.scales, 0x80, sizeof b.scales);
  }
  const auto k6_tiles = cpu::make_tiles(QuantType::Q6_K, k6.data(), 16, cols);
  acts.prepare(QuantType::Q6_K, ones.data(), 1, cols);
  cpu::matvec_tiles(QuantType::Q6_K, k6_tiles.data(), cols, 0, 1, acts, out.data(), 16);
  for (float o : out) EXPECT_NEAR(o, 4096.0 * double(cols), 1e-6 * 4096.0 * double(cols));
}

// The CPU backend's projection over a matrix whose rows are not whole tiles:
// the tiles and the rows past them, on two threads, equal the portable path.
TEST(QuantTiles, ProjectionCoversTheRowsPastTheLastTile) {
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_K, QuantType::Q6_K}) {
    Problem p(t, 16 * 5 + 7, 512, 3, 71);
    Tensor tensor;
    tensor.data = p.w.data();
    tensor.dtype = p.t;
    tensor.rows = p.rows;
    tensor.cols = p.cols;
    cpu::Weights weights;
    const cpu::Matrix m = weights.matrix(tensor);
    EXPECT_EQ(m.tile_count, cpu::tiles_available(p.t) ? 5 : 0) << quant_type_name(t);
    ThreadPool pool(2);
    cpu::ProjectScratch scratch;
    std::vector<float> got(size_t(p.n_x * p.rows), NAN), ref(got.size());
    cpu::project(got.data(), p.x.data(), p.n_x, m, pool, scratch);
    cpu::matvec(p.t, p.w.data(), p.rows, p.cols, p.x.data(), p.n_x, ref.data(), Isa::Portable);
    for (size_t k = 0; k < ref.size(); ++k)
      EXPECT_NEAR(got[k], ref[k], 1e-4 * (1 + std::fabs(ref[k]))) << quant_type_name(t) << " output " << k;
  }
}

// Several products of one input in one pass (Q, K, V; gate and up) give
// each product's outputs bit for bit as a pass of its own: tiled and untiled
// types, two of one type (sharing their prepared activations), an 8-bit type
// read as two terms, float32 through matmul; one and three activation rows.
TEST(QuantTiles, FusedProjectionsEqualEachAlone) {
  const QuantType types[] = {QuantType::Q4_K, QuantType::Q6_K, QuantType::Q4_K, QuantType::Q8_0,
                             QuantType::Q4_0, QuantType::F16,  QuantType::F32};
  for (int n_x : {1, 3}) {
    std::vector<Problem> problems;
    cpu::Weights weights;
    std::vector<cpu::Matrix> matrices;
    for (QuantType t : types) {  // each its own weights and row count; all read problems[0].x
      const int j = int(problems.size());
      problems.emplace_back(t, 16 * 3 + 5 + j, 512, n_x, 90 + 2 * uint64_t(j));
    }
    for (Problem& p : problems) {
      Tensor tensor;
      tensor.data = p.w.data();
      tensor.dtype = p.t;
      tensor.rows = p.rows;
      tensor.cols = p.cols;
      matrices.push_back(weights.matrix(tensor));
    }
    ThreadPool pool(2);
    cpu::ProjectScratch scratch;
    std::vector<std::vector<float>> fused(problems.size());
    std::vector<cpu::Product> products;
    for (size_t j = 0; j < problems.size(); ++j) {
      fused[j].assign(size_t(n_x * problems[j].rows), NAN);
      products.push_back({fused[j].data(), &matrices[j]});
    }
    cpu::project(products, problems[0].x.data(), n_x, pool, scratch);
    for (size_t j = 0; j < problems.size(); ++j) {
      std::vector<float> alone(fused[j].size(), NAN);
      cpu::project(alone.data(), problems[0].x.data(), n_x, matrices[j], pool, scratch);
      for (size_t k = 0; k < alone.size(); ++k)
        ASSERT_EQ(fused[j][k], alone[k]) << "product " << j << " (" << quant_type_name(problems[j].t) << ") output " << k
                                         << ", " << n_x << " activation rows";
    }
  }
}

TEST(QuantTiles, OneErrorLine) {
  expect_error([] { cpu::tile_bytes(QuantType::Q5_0, 256); }, "Q5_0 tiles: not a tiled type");
  std::vector<float> x(256);
  cpu::QuantizedActs acts;
  acts.prepare(QuantType::Q4_K, x.data(), 1, 256);
  std::vector<uint8_t> tiles(4096);
  float out[16];
  expect_error([&] { cpu::matvec_tiles(QuantType::Q8_0, tiles.data(), 256, 0, 1, acts, out, 16); },
               "activations prepared for Q4_K");
}

TEST(QuantKernelDispatch, BestPathIsSupported) {
  EXPECT_TRUE(cpu::isa_supported(Isa::Portable));
  EXPECT_TRUE(cpu::isa_supported(cpu::best_isa()));
  // The best path is the widest this CPU has.
  if (cpu::isa_supported(Isa::Avx512)) {
    EXPECT_EQ(cpu::best_isa(), Isa::Avx512);
  } else if (cpu::isa_supported(Isa::Avx2)) {
    EXPECT_EQ(cpu::best_isa(), Isa::Avx2);
  }
#if defined(__x86_64__)
  // AVX2 (leaf 7, EBX), FMA and F16C (leaf 1, ECX) straight from CPUID, as the OS-independent truth
  // (clang 14's __builtin_cpu_supports knows no "f16c").
  unsigned a = 0, b = 0, c = 0, d = 0;
  ASSERT_TRUE(__get_cpuid(1, &a, &b, &c, &d));
  const bool fma_f16c = (c & bit_FMA) && (c & bit_F16C);
  ASSERT_TRUE(__get_cpuid_count(7, 0, &a, &b, &c, &d));
  EXPECT_EQ(cpu::isa_supported(Isa::Avx2), fma_f16c && (b & bit_AVX2));
#endif
}

TEST(QuantActivations, WithinHalfAStepAndWithinTheirRange) {
  auto x = gaussian(1024, 31);
  x[5] = -9.0f;
  // 8 bits (Q5_0, Q2_K) never reach -128 (the maddubs operands rely on it); 16 bits (Q8_0, Q4_K) stay within
  // +-32767 (the int32 lanes' bound relies on it), and are ~258 times finer.
  for (QuantType t : {QuantType::Q5_0, QuantType::Q2_K, QuantType::Q8_0, QuantType::Q4_K}) {
    cpu::QuantizedActs acts;
    acts.prepare(t, x.data(), 2, 512);
    const bool eight = cpu::eight_bit(acts.format());
    const float levels = eight ? 127.0f : 32767.0f;
    double worst = 0;
    for (int r = 0; r < 2; ++r)
      for (int64_t i = 0; i < 512; ++i) {
        const float v = acts.value(r, i), d = acts.scale(r, i);
        ASSERT_LE(std::fabs(v - x[r * 512 + i]), 0.5f * d * 1.0001f) << quant_type_name(t);
        ASSERT_GE(v / d, -levels - 1e-3f) << quant_type_name(t);
        ASSERT_LE(v / d, levels + 1e-3f) << quant_type_name(t);
        worst = std::max(worst, double(std::fabs(v - x[r * 512 + i])));
      }
    EXPECT_LE(worst, (eight ? 2e-2 : 1e-4) * 9.0) << quant_type_name(t) << ": largest |x| is 9";
  }
}

TEST(QuantActivations, NonFiniteActivationGivesNaN) {
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_K, QuantType::F16})
    for (float bad : {INFINITY, -INFINITY, NAN}) {
      Problem p(t, 2, 512, 1, 41);
      p.x[300] = bad;
      std::vector<float> out(2);
      for (Isa isa : kIsas) {
        if (skip_isa(isa)) continue;
        cpu::matvec(p.t, p.w.data(), 2, 512, p.x.data(), 1, out.data(), isa);
        // 8-bit activations: the block's scale is NaN. Float32 activations: IEEE arithmetic (inf or NaN).
        for (float o : out)
          if (t == QuantType::F16)
            EXPECT_FALSE(std::isfinite(o)) << bad << " " << cpu::isa_name(isa);
          else
            EXPECT_TRUE(std::isnan(o)) << quant_type_name(t) << " " << bad << " " << cpu::isa_name(isa);
      }
    }
}

TEST(QuantKernelErrors, OneErrorLine) {
  std::vector<float> x(300), out(4);
  std::vector<uint8_t> w(4096);
  expect_error([&] { cpu::matvec(QuantType::Q4_K, w.data(), 1, 300, x.data(), 1, out.data()); }, "Q4_K row of 300");
  expect_error([&] { cpu::matvec(QuantType::Q8_0, w.data(), 1, 40, x.data(), 1, out.data()); }, "Q8_0 row of 40");
  cpu::QuantizedActs acts;
  acts.prepare(QuantType::Q8_0, x.data(), 1, 256);
  expect_error([&] { cpu::matvec_rows(QuantType::Q4_K, w.data(), 256, 0, 1, acts, out.data(), 1); },
               "activations prepared for Q8_0");
  expect_error([&] { cpu::matvec_rows(QuantType::Q8_0, w.data(), 128, 0, 1, acts, out.data(), 1); },
               "rows of 256");
  expect_error([&] { acts.prepare(QuantType::Q8_0, x.data(), 0, 256); }, "0 rows");
}
