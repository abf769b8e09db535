// The attention building blocks of the CPU backend against their one-row
// forms, bit for bit: batching keys must not move a single logit, or the
// greedy references would depend on how many keys a head holds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu/cpu_ops.h"

using namespace h2o;

namespace {

// Values over several magnitudes, so that any change in the order of
// additions shows in the last bits.
std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-8, 8);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(unit(rng), exponent(rng));
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

const int kWidths[] = {7, 8, 16, 24, 32, 48, 64, 80, 128};
const int kRowCounts[] = {1, 5, 16, 17, 33, 64};

}  // namespace

TEST(CpuOps, DotRowsEqualDotBitForBit) {
  for (int n : kWidths)
    for (int n_rows : kRowCounts) {
      const std::vector<float> q = random_values(size_t(n), 1), rows = random_values(size_t(n) * n_rows, 2 + n);
      std::vector<float> out(size_t(n_rows), -1.0f);
      cpu::dot_rows(out.data(), q.data(), rows.data(), n_rows, n);
      for (int j = 0; j < n_rows; ++j)
        ASSERT_TRUE(same_bits(out[size_t(j)], cpu::dot(q.data(), &rows[size_t(j) * n], n)))
            << "n " << n << ", " << n_rows << " rows, row " << j;
    }
}

TEST(CpuOps, WeightedRowsSumInRowOrder) {
  for (int n : kWidths)
    for (int n_rows : kRowCounts) {
      const std::vector<float> w = random_values(size_t(n_rows), 3), rows = random_values(size_t(n) * n_rows, 4 + n);
      std::vector<float> out(size_t(n), -1.0f);
      cpu::weighted_rows(out.data(), w.data(), rows.data(), n_rows, n);
      for (int i = 0; i < n; ++i) {
        float expected = 0;  // fused where the CPU fuses, as weighted_rows' vector loops compile
        for (int j = 0; j < n_rows; ++j) {
#ifdef __FMA__
          expected = std::fma(w[size_t(j)], rows[size_t(j) * n + i], expected);
#else
          expected = w[size_t(j)] * rows[size_t(j) * n + i] + expected;
#endif
        }
        ASSERT_TRUE(same_bits(out[size_t(i)], expected)) << "n " << n << ", " << n_rows << " rows, element " << i;
      }
    }
}
