// The emulated device's integer intrinsics against a scalar reference:
// __dp4a as the hardware computes it (byte lanes signed or unsigned, the sum
// wrapping at 32 bits), for the integer dot products of quantized kernels.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>

#include "kernels/portable.h"  // the emulated device (H2O_SIMT)

namespace {

// The sum in 64 bits, then taken modulo 2^32: what dp4a's 32-bit adder leaves.
int32_t reference_dp4a(uint32_t a, uint32_t b, int32_t c, bool is_signed) {
  int64_t sum = c;
  for (int lane = 0; lane < 4; ++lane) {
    const uint32_t x = (a >> (8 * lane)) & 0xFF, y = (b >> (8 * lane)) & 0xFF;
    sum += is_signed ? int64_t(int8_t(x)) * int64_t(int8_t(y)) : int64_t(x) * int64_t(y);
  }
  return int32_t(uint32_t(uint64_t(sum)));
}

}  // namespace

TEST(SimtIntrinsics, Dp4aSumsSignedOrUnsignedByteProductsAndWrapsAt32Bits) {
  // Known values: the extremes of a byte, and an accumulator at the edge of int.
  EXPECT_EQ(__dp4a(int(0x80808080u), int(0x80808080u), 0), 4 * 128 * 128);
  EXPECT_EQ(__dp4a(-1, 0x01010101, 10), 6);
  EXPECT_EQ(__dp4a(0x7F7F7F7F, 0x7F7F7F7F, INT_MAX), int32_t(uint32_t(INT_MAX) + 4u * 127u * 127u));
  EXPECT_EQ(__dp4a(0xFFFFFFFFu, 0xFFFFFFFFu, 0u), 4u * 255u * 255u);
  EXPECT_EQ(__dp4a(0x01020304u, 0x05060708u, 0xFFFFFFFFu), 1u * 5 + 2 * 6 + 3 * 7 + 4 * 8 - 1);
  std::mt19937 random(3);
  for (int i = 0; i < 20000; ++i) {
    const uint32_t a = random(), b = random(), c = random();
    ASSERT_EQ(__dp4a(int(a), int(b), int(c)), reference_dp4a(a, b, int32_t(c), true)) << a << " " << b << " " << c;
    ASSERT_EQ(int32_t(__dp4a(a, b, c)), reference_dp4a(a, b, int32_t(c), false)) << a << " " << b << " " << c;
  }
}
