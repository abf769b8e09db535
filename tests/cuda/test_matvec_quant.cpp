// The block-format kernels (`--precision native`) against the CPU's
// dequantisation of the same bytes (core/model/quant.h): dequantize_rows bit
// for bit, matvec_quant (1..8 rows) and Blas's slabs (more rows) against a
// float64 sum of the CPU-dequantised weights, a matrix of several types as a
// fused Q|K|V of a Q4_K_M file holds them. Blocks are random bytes with
// finite scales, so every code, scale and min bit pattern turns up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/model/quant.h"
#include "kernels/blas.h"
#include "kernels/device_buffer.h"
#include "kernels/launch.h"
#include "kernels/weight_convert.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/device_array.h"
#include "tests/cuda/same_int8_inputs.h"

using namespace h2o;
using namespace h2o::kern;
using test::DeviceArray;
using test::TestStream;

namespace {

const DType kFormats[] = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16};

uint16_t small_half(std::mt19937& rng) { return f32_to_f16(float(rng() % 1000 + 1) / 16384.0f); }

// `rows` rows of `cols` elements of `type`: random code bytes, finite scales (and f16 values in [-1, 1]).
std::vector<uint8_t> random_rows(std::mt19937& rng, DType type, int rows, int cols) {
  std::vector<uint8_t> bytes(size_t(rows) * row_bytes(type, cols));
  for (uint8_t& b : bytes) b = uint8_t(rng());
  const size_t n = bytes.size() / block_bytes(type);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* b = bytes.data() + i * block_bytes(type);
    switch (type) {
      case DType::Q8_0: reinterpret_cast<BlockQ8_0*>(b)->d = small_half(rng); break;
      case DType::Q4_0: reinterpret_cast<BlockQ4_0*>(b)->d = small_half(rng); break;
      case DType::Q4_K: reinterpret_cast<BlockQ4_K*>(b)->d = small_half(rng), reinterpret_cast<BlockQ4_K*>(b)->dmin = small_half(rng); break;
      case DType::Q5_K: reinterpret_cast<BlockQ5_K*>(b)->d = small_half(rng), reinterpret_cast<BlockQ5_K*>(b)->dmin = small_half(rng); break;
      case DType::Q6_K: reinterpret_cast<BlockQ6_K*>(b)->d = small_half(rng); break;
      default: {  // F16
        const uint16_t h = f32_to_f16(float(int(rng() % 2001) - 1000) / 1000.0f);
        std::memcpy(b, &h, 2);
      }
    }
  }
  return bytes;
}

// The CPU's values of every row.
std::vector<float> dequantised(const std::vector<uint8_t>& bytes, DType type, int rows, int cols) {
  std::vector<float> out(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r)
    dequantize_row(type, bytes.data() + size_t(r) * row_bytes(type, cols), out.data() + size_t(r) * cols, cols);
  return out;
}

// Device bytes padded as uploads pad them (kMatrixTailBytes).
struct DeviceBytes {
  gpu::DeviceBuffer buffer;
  DeviceBytes(const std::vector<uint8_t>& host, gpu::Stream s) : buffer(host.size() + kMatrixTailBytes) {
    gpu::copy_to_device(buffer.get(), host.data(), host.size(), s);
    gpu::synchronize(s);
  }
};

// A matrix of three runs of different types, as a Q4_K_M layer's Q|K|V (Q4_K
// q and k, Q6_K v) with an f16 run too: 8, 5 and 6 rows of `in`.
struct MixedMatrix {
  std::vector<DeviceBytes> parts;
  std::vector<float> w;  // the CPU's values of every row
  DeviceMatrix m;
  MixedMatrix(std::mt19937& rng, int in, gpu::Stream s) {
    const DType types[] = {DType::Q4_K, DType::Q6_K, DType::F16};
    const int part_rows[] = {8, 5, 6};
    parts.reserve(3);
    m.cols = in;
    for (int p = 0; p < 3; ++p) {
      const std::vector<uint8_t> host = random_rows(rng, types[p], part_rows[p], in);
      const std::vector<float> values = dequantised(host, types[p], part_rows[p], in);
      w.insert(w.end(), values.begin(), values.end());
      parts.emplace_back(host, s);
      m.part[m.parts++] = {types[p], parts.back().buffer.get(), part_rows[p]};
    }
  }
};

std::vector<float> random_x(std::mt19937& rng, int n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = float(int(rng() % 20001) - 10000) / 10000.0f;
  return x;
}

// out[r][o] against sum_i w[o][i] x[r][i] in float64 (+ start), within the
// f32 rounding of any summation order of `in` terms (sum |w x| 2^-24 per term).
void expect_products(const std::vector<float>& got, int ldo, const std::vector<float>& w, const std::vector<float>& x,
                     const std::vector<float>& start, int rows, int in, int out, const std::string& what) {
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      const size_t e = size_t(r) * ldo + o;
      double sum = start.empty() ? 0.0 : start[e], magnitude = std::fabs(sum);
      for (int i = 0; i < in; ++i) {
        const double p = double(w[size_t(o) * in + i]) * x[size_t(r) * in + i];
        sum += p;
        magnitude += std::fabs(p);
      }
      ASSERT_NEAR(got[e], sum, (in / 8 + 12) * std::ldexp(1.0, -24) * magnitude)
          << what << " rows " << rows << " row " << r << " output " << o;
    }
}

}  // namespace

// dequantize_rows gives the CPU's values bit for bit, for rows picked by id
// (the embedding: repeats, any order) and for a run of rows from `first`.
H2O_CUDA_TEST(MatvecQuant, DequantisedRowsAreTheCpuValues) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(61);
  const int rows = 9, cols = 512;
  for (DType type : kFormats) {
    const std::vector<uint8_t> host = random_rows(rng, type, rows, cols);
    const std::vector<float> cpu = dequantised(host, type, rows, cols);
    const DeviceBytes w(host, s.get());
    const std::vector<int> ids = {8, 0, 3, 3, 7};
    DeviceArray<int> d_ids(ids, s.get());
    DeviceArray<float> picked(ids.size() * cols, s.get()), run(size_t(4) * (cols + 8), s.get());
    dequantize_rows(type, w.buffer.get(), cols, d_ids.get(), 0, int(ids.size()), picked.get(), cols, 64, s.get());
    dequantize_rows(type, w.buffer.get(), cols, nullptr, 5, 4, run.get(), cols + 8, 64, s.get());
    const auto got = picked.read(), got_run = run.read();
    for (size_t r = 0; r < ids.size(); ++r)
      ASSERT_EQ(0, std::memcmp(&got[r * cols], &cpu[size_t(ids[r]) * cols], cols * 4)) << dtype_name(type) << " row " << r;
    for (int r = 0; r < 4; ++r)
      ASSERT_EQ(0, std::memcmp(&got_run[size_t(r) * (cols + 8)], &cpu[size_t(5 + r) * cols], cols * 4))
          << dtype_name(type) << " run row " << r;
  }
}

// matvec_quant for 1..8 rows, with and without the residual add, into an
// output of a wider stride (the columns past `out` untouched), and Blas's
// path for more rows: dequantised slabs (5 rows each here) then the library
// GEMM. 13 outputs: a warp with fewer than 4 rows; 512 inputs: 16 pieces.
H2O_CUDA_TEST(MatvecQuant, MatchesFloat64OfTheCpuValues) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(67);
  const int in = 512, out = 13, ldo = out + 3, many = kMatvecMaxRows + 3;
  const std::vector<float> x = random_x(rng, many * in);
  DeviceArray<float> dx(x, s.get());
  for (DType type : kFormats) {
    const std::vector<uint8_t> host = random_rows(rng, type, out, in);
    const std::vector<float> w = dequantised(host, type, out, in);
    const DeviceBytes dw(host, s.get());
    std::vector<float> start(size_t(many) * ldo);
    for (float& v : start) v = float(int(rng() % 2001) - 1000) / 100.0f;
    for (int rows = 1; rows <= kMatvecMaxRows; ++rows)
      for (bool accumulate : {false, true}) {
        DeviceArray<float> o(start, s.get());
        matvec_quant(type, o.get(), ldo, dx.get(), dw.buffer.get(), rows, in, out, accumulate, s.get());
        const auto got = o.read();
        const std::string what = std::string(dtype_name(type)) + (accumulate ? " accumulate" : "");
        expect_products(got, ldo, w, x, accumulate ? start : std::vector<float>{}, rows, in, out, what);
        for (int r = 0; r < many; ++r)
          for (int c = 0; c < ldo; ++c)
            if (r >= rows || c >= out) {
              ASSERT_EQ(got[size_t(r) * ldo + c], start[size_t(r) * ldo + c]) << what << " wrote outside";
            }
      }
    Blas blas(s.get(), kMatvecMaxRows, size_t(5) * in * 4);
    DeviceMatrix m;
    m.cols = in;
    m.part[m.parts++] = {type, dw.buffer.get(), out};
    DeviceArray<float> o(start, s.get());
    blas.gemm(o.get(), dx.get(), DType::F32, m, many, true);
    expect_products(o.read(), out, w, x, start, many, in, out, std::string(dtype_name(type)) + " slabs");
  }
}

// A matrix of three runs of different types (a Q4_K_M layer's Q|K|V: Q4_K q
// and k, Q6_K v; here with an f16 run too), multiplied by Blas into one
// output: each run's columns, at 3 rows (matvec_quant) and 11 (slabs).
H2O_CUDA_TEST(MatvecQuant, MatrixOfSeveralTypes) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(71);
  const int in = 256;
  const MixedMatrix mixed(rng, in, s.get());
  const DeviceMatrix& m = mixed.m;
  const std::vector<float>& w = mixed.w;
  const int out = m.rows();
  ASSERT_EQ(m.bytes(), int64_t(8 * row_bytes(DType::Q4_K, in) + 5 * row_bytes(DType::Q6_K, in) + 6 * in * 2));
  Blas blas(s.get(), kMatvecMaxRows, dequant_scratch_bytes(m));
  for (int rows : {3, 11}) {
    const std::vector<float> x = random_x(rng, rows * in);
    DeviceArray<float> dx(x, s.get()), o(size_t(rows) * out, s.get());
    blas.gemm(o.get(), dx.get(), DType::F32, m, rows, false);
    expect_products(o.read(), out, w, x, {}, rows, in, out, "mixed");
  }
}

// ---- the 8-bit input path (matvec_int8, int8_activations.h) ----

namespace {

const DType kInt8Formats[] = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

// Rows of x already on the 8-bit grid: each block of 32 is d * q with d a
// power of two and one |q| = 127, so quantising it loses nothing (d = amax /
// 127 exactly, x / d = q exactly) and the integer path's sum is the exact one.
std::vector<float> on_grid_x(std::mt19937& rng, int n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int b = 0; b < n / kInt8BlockElems; ++b) {
    const float d = std::ldexp(1.0f, -int(rng() % 6) - 4);
    for (int i = 0; i < kInt8BlockElems; ++i) x[size_t(b) * kInt8BlockElems + i] = d * float(int(rng() % 255) - 127);
    x[size_t(b) * kInt8BlockElems + rng() % kInt8BlockElems] = d * (rng() % 2 ? 127.0f : -127.0f);
  }
  return x;
}

// x quantised on the device into a buffer laid out as Blas lays it out.
struct DeviceInt8 {
  gpu::DeviceBuffer buffer;
  Int8Rows rows;
  DeviceInt8(const DeviceArray<float>& x, int count, int in, gpu::Stream s)
      : buffer(int8_rows_bytes(count, in)), rows(int8_rows_at(buffer.get(), count, in)) {
    quantize_int8(x.get(), count, in, rows, s);
  }
};

}  // namespace

// The device's codes and blocks are the host rule's (quantize_int8_block),
// bit for bit (this file is built without FMA contraction, as the rule asks):
// an all-zero block, a block on the grid, random values; the two terms
// within half a step of their scales.
H2O_CUDA_TEST(MatvecInt8, QuantisedInputsAreTheHostRules) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(73);
  const int rows = 3, in = 256;
  std::vector<float> x = random_x(rng, rows * in);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
  const std::vector<float> grid = on_grid_x(rng, 32);
  std::copy(grid.begin(), grid.end(), x.begin() + 64);
  DeviceArray<float> dx(x, s.get());
  DeviceInt8 q(dx, rows, in, s.get());
  std::vector<int8_t> codes[2] = {std::vector<int8_t>(size_t(rows) * in), std::vector<int8_t>(size_t(rows) * in)};
  std::vector<Int8Block> blocks(size_t(rows) * in / kInt8BlockElems);
  for (int t = 0; t < 2; ++t) gpu::copy_to_host(codes[t].data(), q.rows.codes[t], codes[t].size(), s.get());
  gpu::copy_to_host(blocks.data(), q.rows.blocks, blocks.size() * sizeof(Int8Block), s.get());
  s.sync();
  double worst_two_terms = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    float values[kInt8BlockElems];
    std::copy_n(x.begin() + b * kInt8BlockElems, kInt8BlockElems, values);
    uint32_t words[2][kInt8BlockElems / 4];
    Int8Block expected;
    quantize_int8_block(values, words[0], words[1], expected);
    ASSERT_EQ(0, std::memcmp(&blocks[b], &expected, sizeof(Int8Block))) << "block " << b;
    for (int t = 0; t < 2; ++t)
      ASSERT_EQ(0, std::memcmp(&codes[t][b * kInt8BlockElems], words[t], sizeof(words[t]))) << "block " << b;
    for (int i = 0; i < kInt8BlockElems; ++i) {
      const double one = double(expected.d[0]) * codes[0][b * kInt8BlockElems + i];
      const double two = one + double(expected.d[1]) * codes[1][b * kInt8BlockElems + i];
      ASSERT_NEAR(one, values[i], expected.d[0] / 2 * 1.0001) << b << " " << i;
      ASSERT_NEAR(two, values[i], expected.d[1] / 2 * 1.0001 + 1e-7 * std::fabs(values[i])) << b << " " << i;
      if (expected.d[0] > 0) worst_two_terms = std::max(worst_two_terms, std::fabs(two - values[i]) / expected.d[0]);
    }
  }
  EXPECT_LT(worst_two_terms, 0.5 / 127 * 1.01) << "the second term's error, in steps of the first";
  EXPECT_EQ(blocks[1].d[0], 0.0f);  // the zero block
  for (int i = 0; i < kInt8BlockElems; ++i) EXPECT_EQ(blocks[2].d[0] * codes[0][64 + i], grid[i]) << i;  // lossless
  EXPECT_EQ(blocks[2].d[1], 0.0f);  // nothing left for the second term
}

// On the grid the integer path is exact but for f32 rounding: every format,
// 1..8 rows, with and without the residual add, into a wider output, the
// columns past it untouched. 13 outputs (a warp with fewer than 4 rows), 512
// inputs. A code, scale, offset or half-block sum misplaced shows as an error
// of the order of the sum itself.
H2O_CUDA_TEST(MatvecInt8, OnTheGridItIsExact) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(79);
  const int out = 13, ldo = out + 3;
  for (int in : {64, 512})
  for (DType type : kInt8Formats) {
    if (in % kQK_K != 0 && (type == DType::Q4_K || type == DType::Q5_K || type == DType::Q6_K)) continue;
    const std::vector<float> x = on_grid_x(rng, kMatvecMaxRows * in);
    DeviceArray<float> dx(x, s.get());
    const std::vector<uint8_t> host = random_rows(rng, type, out, in);
    const std::vector<float> w = dequantised(host, type, out, in);
    const DeviceBytes dw(host, s.get());
    std::vector<float> start(size_t(kMatvecMaxRows) * ldo);
    for (float& v : start) v = float(int(rng() % 2001) - 1000) / 100.0f;
    for (int rows = 1; rows <= kMatvecMaxRows; ++rows)
      for (bool accumulate : {false, true}) {
        DeviceInt8 q(dx, rows, in, s.get());
        DeviceArray<float> o(start, s.get());
        matvec_int8(type, o.get(), ldo, q.rows, dw.buffer.get(), rows, out, accumulate, s.get());
        const auto got = o.read();
        const std::string what = std::string(dtype_name(type)) + " int8" + (accumulate ? " accumulate" : "");
        // Each group's a d_x dot and b sum(x) are rounded apart: a few more ulps than a plain sum.
        expect_products(got, ldo, w, x, accumulate ? start : std::vector<float>{}, rows, in, out, what);
        for (int r = 0; r < kMatvecMaxRows; ++r)
          for (int c = 0; c < ldo; ++c)
            if (r >= rows || c >= out) {
              ASSERT_EQ(got[size_t(r) * ldo + c], start[size_t(r) * ldo + c]) << what;
            }
      }
  }
}

// Off the grid, the error is x's rounding alone, by the second term's half
// step: the RMS relative error over outputs, ~1e-5 for random data (one
// term alone would be ~0.5 %).
// And Blas takes the path for a matrix of several types (Q4_K, Q6_K, f16):
// the f16 part multiplies f32 inputs, the others 8-bit ones.
H2O_CUDA_TEST(MatvecInt8, OffTheGridTheErrorIsTheInputsRounding) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(83);
  const int in = 512, out = 40, rows = 3;
  const std::vector<float> x = random_x(rng, rows * in);
  DeviceArray<float> dx(x, s.get());
  auto rms_relative = [&](const std::vector<float>& got, const std::vector<float>& w, int outputs) {
    double num = 0, den = 0;
    for (int r = 0; r < rows; ++r)
      for (int o = 0; o < outputs; ++o) {
        double sum = 0;
        for (int i = 0; i < in; ++i) sum += double(w[size_t(o) * in + i]) * x[size_t(r) * in + i];
        num += (got[size_t(r) * outputs + o] - sum) * (got[size_t(r) * outputs + o] - sum);
        den += sum * sum;
      }
    return std::sqrt(num / den);
  };
  for (DType type : kInt8Formats) {
    const std::vector<uint8_t> host = random_rows(rng, type, out, in);
    const DeviceBytes dw(host, s.get());
    DeviceInt8 q(dx, rows, in, s.get());
    DeviceArray<float> o(size_t(rows) * out, s.get());
    matvec_int8(type, o.get(), out, q.rows, dw.buffer.get(), rows, out, false, s.get());
    const double err = rms_relative(o.read(), dequantised(host, type, out, in), out);
    EXPECT_LT(err, 2e-4) << dtype_name(type);
    EXPECT_GT(err, 1e-8) << dtype_name(type) << ": off the grid the inputs are rounded";
    RecordProperty(std::string("rms_relative_error_") + dtype_name(type), std::to_string(err));
  }
  // Blas's path over a matrix of three runs, with and without 8-bit inputs.
  const MixedMatrix mixed(rng, in, s.get());
  const DeviceMatrix& m = mixed.m;
  const std::vector<float>& w = mixed.w;
  Blas int8(s.get(), kMatvecMaxRows, 0, in), exact(s.get(), kMatvecMaxRows);
  DeviceArray<float> a(size_t(rows) * m.rows(), s.get()), b(size_t(rows) * m.rows(), s.get());
  int8.gemm(a.get(), dx.get(), DType::F32, m, rows, false);
  exact.gemm(b.get(), dx.get(), DType::F32, m, rows, false);
  const auto got = a.read(), want = b.read();
  EXPECT_LT(rms_relative(got, w, m.rows()), 2e-4);
  expect_products(want, m.rows(), w, x, {}, rows, in, m.rows(), "exact");
  // The f16 run's outputs (the last 6 columns) are the exact path's, bit for bit.
  for (int r = 0; r < rows; ++r)
    for (int o = 13; o < m.rows(); ++o) ASSERT_EQ(got[size_t(r) * m.rows() + o], want[size_t(r) * m.rows() + o]);
  int differing = 0;
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < 13; ++o) differing += got[size_t(r) * m.rows() + o] != want[size_t(r) * m.rows() + o];
  EXPECT_GT(differing, 30) << "the Q4_K and Q6_K runs multiplied 8-bit inputs";
}

// A norm that writes the next product's 8-bit input (rmsnorm, layernorm with
// `int8`) writes what quantize_int8 makes of its f32 output, bit for bit, and
// the same f32 output as without: rows of 4096 (one block of 1024 threads,
// each quantising at most one block of 32) and 96, picked by a row map. So do
// the activations (swiglu, gelu), a thread per block of 32.
H2O_CUDA_TEST(MatvecInt8, ProducersWriteTheQuantisersInputs) {
  H2O_REQUIRE_CUDA();
  TestStream s;
  std::mt19937 rng(89);
  for (int dim : {96, 4096}) {
    const int rows = 3;
    const std::vector<float> x = random_x(rng, 4 * dim), weight = random_x(rng, dim), bias = random_x(rng, dim);
    const std::vector<int> map = {3, 0, 2};
    DeviceArray<float> dx(x, s.get()), dw(weight, s.get()), db(bias, s.get());
    DeviceArray<int> dmap(map, s.get());
    for (bool layer : {false, true}) {
      const std::string what = std::string(layer ? "layernorm " : "rmsnorm ") + std::to_string(dim);
      DeviceArray<float> plain(size_t(rows) * dim, s.get()), fused(size_t(rows) * dim, s.get());
      gpu::DeviceBuffer a(int8_rows_bytes(rows, dim)), b(int8_rows_bytes(rows, dim));
      const Int8Rows together = int8_rows_at(b.get(), rows, dim);
      if (layer) {
        layernorm(DType::F32, dx.get(), dw.get(), db.get(), plain.get(), dmap.get(), rows, dim, 1e-5f, s.get());
        layernorm(DType::F32, dx.get(), dw.get(), db.get(), fused.get(), dmap.get(), rows, dim, 1e-5f, s.get(), together);
      } else {
        rmsnorm(DType::F32, dx.get(), dw.get(), plain.get(), dmap.get(), rows, dim, 1e-5f, s.get());
        rmsnorm(DType::F32, dx.get(), dw.get(), fused.get(), dmap.get(), rows, dim, 1e-5f, s.get(), together);
      }
      test::expect_same_inputs(plain, fused, a, b, rows, dim, s, what);
    }
    // The activations, from rows of [gate | up] (and the up rows alone for GELU, with a bias).
    const std::vector<float> gate_up = random_x(rng, 2 * rows * dim);
    DeviceArray<float> dgu(gate_up, s.get());
    for (bool gelu_mlp : {false, true}) {
      const std::string what = std::string(gelu_mlp ? "gelu " : "swiglu ") + std::to_string(dim);
      DeviceArray<float> plain(size_t(rows) * dim, s.get()), fused(size_t(rows) * dim, s.get());
      gpu::DeviceBuffer a(int8_rows_bytes(rows, dim)), b(int8_rows_bytes(rows, dim));
      const Int8Rows together = int8_rows_at(b.get(), rows, dim);
      if (gelu_mlp) {
        gelu(DType::F32, dgu.get(), db.get(), plain.get(), rows, dim, 64, s.get());
        gelu(DType::F32, dgu.get(), db.get(), fused.get(), rows, dim, 64, s.get(), together);
      } else {
        swiglu(DType::F32, dgu.get(), plain.get(), rows, dim, 64, s.get());
        swiglu(DType::F32, dgu.get(), fused.get(), rows, dim, 64, s.get(), together);
      }
      test::expect_same_inputs(plain, fused, a, b, rows, dim, s, what);
    }
  }
}
