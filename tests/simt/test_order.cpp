// The orders of order.h: SIMT_ORDER's forms, the permutations, and that a
// kernel whose result depends on the order of its threads (or blocks) gives
// a different result under each, as it may on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/device.h"
#include "kernels/portable.h"

namespace {

TEST(SimtOrder, ParsesWhatSimtOrderAccepts) {
  EXPECT_EQ(simt::parse_order("forward")->kind, simt::Order::Forward);
  EXPECT_EQ(simt::parse_order("reverse")->kind, simt::Order::Reverse);
  const auto shuffled = simt::parse_order("shuffle:17");
  ASSERT_TRUE(shuffled);
  EXPECT_EQ(shuffled->kind, simt::Order::Shuffle);
  EXPECT_EQ(shuffled->seed, 17u);
  EXPECT_EQ(simt::order_name(*shuffled), "shuffle:17");
  EXPECT_EQ(simt::parse_order("shuffle")->seed, 0u);
  for (const char* bad : {"", "backwards", "shuffle:", "shuffle:x", "shuffle:3x", "Reverse"})
    EXPECT_FALSE(simt::parse_order(bad)) << bad;
}

TEST(SimtOrder, ArrangesPermutationsThatAShuffleVariesBySeedAndTurn) {
  std::vector<int> forward, reverse, a, b, c, again;
  simt::arrange(*simt::parse_order("forward"), 5, 8, forward);
  simt::arrange(*simt::parse_order("reverse"), 5, 8, reverse);
  EXPECT_EQ(forward, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(reverse, (std::vector<int>{7, 6, 5, 4, 3, 2, 1, 0}));
  simt::arrange(*simt::parse_order("shuffle:1"), 5, 64, a);
  simt::arrange(*simt::parse_order("shuffle:1"), 6, 64, b);
  simt::arrange(*simt::parse_order("shuffle:2"), 5, 64, c);
  simt::arrange(*simt::parse_order("shuffle:1"), 5, 64, again);
  EXPECT_EQ(a, again) << "a seed gives the same turns on every run";
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(64);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
}

// Every thread appends its index to a log before and after a barrier (a
// plain increment: fibers switch only at barriers here, so it does not tear).
__global__ void turn_log_kernel(int* log, int* count) {
  log[(*count)++] = int(threadIdx.x);
  __syncthreads();
  log[(*count)++] = int(threadIdx.x);
}

// The last block to run leaves its index: an order-dependent result.
__global__ void last_block_kernel(int* out) {
  if (threadIdx.x == 0) *out = int(blockIdx.x + 4 * blockIdx.y);
}

std::vector<int> turns_under(const char* order, int threads) {
  simt::ScopedOrder scoped(*simt::parse_order(order));
  std::vector<int> log(size_t(2 * threads));
  int count = 0;
  h2o::gpu::Stream s = h2o::gpu::create_stream();
  H2O_LAUNCH(dim3(1), dim3(unsigned(threads)), s, turn_log_kernel)(log.data(), &count);
  h2o::gpu::destroy_stream(s);
  return log;
}

int last_block_under(const char* order) {
  simt::ScopedOrder scoped(*simt::parse_order(order));
  int out = -1;
  h2o::gpu::Stream s = h2o::gpu::create_stream();
  H2O_LAUNCH(dim3(4, 3), dim3(32), s, last_block_kernel)(&out);
  h2o::gpu::destroy_stream(s);
  return out;
}

TEST(SimtOrder, ThreadsTakeTheirTurnsBetweenBarriersInTheOrder) {
  const std::vector<int> forward = turns_under("forward", 64), reverse = turns_under("reverse", 64);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(forward[size_t(i)], i);
    EXPECT_EQ(reverse[size_t(i)], 63 - i);
  }
  // After the barrier the last to arrive goes on first, then the others in the order.
  EXPECT_EQ(forward[64], 63);
  EXPECT_EQ(forward[65], 0);
  EXPECT_EQ(reverse[64], 0);
  EXPECT_EQ(reverse[65], 63);
  const std::vector<int> shuffled = turns_under("shuffle:3", 64);
  EXPECT_NE(shuffled, forward);
  EXPECT_NE(shuffled, reverse);
  EXPECT_EQ(shuffled, turns_under("shuffle:3", 64));
  EXPECT_NE(std::vector<int>(shuffled.begin(), shuffled.begin() + 64),
            std::vector<int>(shuffled.begin() + 64, shuffled.end()))
      << "each turn is shuffled afresh";
}

TEST(SimtOrder, BlocksRunInTheOrder) {
  EXPECT_EQ(last_block_under("forward"), 11);
  EXPECT_EQ(last_block_under("reverse"), 0);
  std::vector<int> lasts;
  for (const char* order : {"shuffle:1", "shuffle:2", "shuffle:3", "shuffle:4"}) lasts.push_back(last_block_under(order));
  EXPECT_TRUE(std::any_of(lasts.begin(), lasts.end(), [](int b) { return b != 11; }));
}

}  // namespace
