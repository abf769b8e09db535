// The race check (race_check.h) on small kernels written for it: a missing
// __syncthreads() is reported with the kernel, the array and the two threads,
// under every order; what CUDA orders (a barrier, a warp barrier between
// lanes of one warp, atomics among themselves, many readers) is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/block_reduce.cuh"
#include "kernels/device.h"
#include "kernels/portable.h"

namespace {

using h2o::kern::SharedPtr;

constexpr int kThreads = 64;  // two warps

// Each thread writes its slot and reads its neighbour's; the barrier between
// is what kBarrier = false omits.
template <bool kBarrier>
__global__ void neighbour_kernel(int* out) {
  H2O_SHARED(int, slots, [kThreads]);
  const int t = int(threadIdx.x);
  slots[t] = 10 * t;
  if (kBarrier) __syncthreads();
  out[t] = slots[(t + 1) % kThreads];
}

// Lane l reads what `partner(l)` wrote, after a shuffle (a warp barrier) but no __syncthreads().
__global__ void after_shuffle_kernel(int* out, bool across_warps) {
  H2O_SHARED(int, box, [kThreads]);
  const int t = int(threadIdx.x);
  box[t] = t;
  const int lane0 = __shfl_sync(0xffffffffu, t, 0);
  const int partner = across_warps ? (t + 32) % kThreads : (t & ~31) | ((t + 1) & 31);
  out[t] = box[partner] + 0 * lane0;
}

// Counts values by their low two bits with shared atomics; `peek` adds a
// plain read of a counter while other threads may still be adding to it.
__global__ void histogram_kernel(const int* values, int n, int* out, bool peek) {
  H2O_SHARED(int, counts, [4]);
  const int t = int(threadIdx.x);
  if (t < 4) counts[t] = 0;
  __syncthreads();
  for (int i = t; i < n; i += int(blockDim.x)) atomicAdd(&counts[values[i] & 3], 1);
  if (peek && t == 5) out[4] = counts[0];
  __syncthreads();
  if (t < 4) out[t] = counts[t];
}

// One thread publishes a value through a shared scalar, every thread reads it.
template <bool kBarrier>
__global__ void broadcast_kernel(int* out) {
  H2O_SHARED(int, value);
  if (threadIdx.x == 0) value = 42;
  if (kBarrier) __syncthreads();
  out[threadIdx.x] = value;
}

// Reads an element no thread of the block wrote.
__global__ void unwritten_kernel(float* out) {
  H2O_SHARED(float, table, [2][kThreads]);
  const int t = int(threadIdx.x);
  table[0][t] = 1.0f;
  __syncthreads();
  out[t] = table[0][t] + (t == 7 ? table[1][t] : 0.0f);
}

// block_reduce without its second barrier: warp 0 reads the warps' slots
// while warp 1 may not have written its own yet. Declared in a helper, as
// the kernels' reductions are: the report names the helper and the kernel.
__device__ int sum_without_barrier(int v, SharedPtr<int> slots) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  v = h2o::kern::warp_reduce(v, h2o::kern::Sum{});
  if (lane == 0) slots[warp] = v;
  return h2o::kern::warp_reduce(lane < int(blockDim.x) / 32 ? int(slots[lane]) : 0, h2o::kern::Sum{});
}
__global__ void broken_sum_kernel(int* out) {
  H2O_SHARED(int, warp_sums, [32]);
  out[threadIdx.x] = sum_without_barrier(int(threadIdx.x), warp_sums);
}
// The kernels' block helpers (block_reduce.cuh), each used twice in a row on
// the same slots, as capture.cu uses block_reduce: their leading barriers
// keep the second use's writes from the first use's reads.
constexpr int kHelperResults = 8;
__global__ void block_helpers_kernel(int* out) {
  H2O_SHARED(int, warp_sums, [32]);
  H2O_SHARED(float, values, [32]);
  H2O_SHARED(int, indices, [32]);
  H2O_SHARED(int, scan, [kThreads + 1]);
  using namespace h2o::kern;
  const int t = int(threadIdx.x);
  int* mine = out + kHelperResults * t;
  mine[0] = block_reduce(t, Sum{}, 0, warp_sums);
  mine[1] = block_reduce(1, Sum{}, 0, warp_sums);
  mine[2] = block_argmax(ArgMax{float(t % 7), t}, values, indices).index;
  mine[3] = block_argmax(ArgMax{float(-t), t}, values, indices).index;
  mine[4] = block_exclusive_scan(1, scan, &mine[5]);
  mine[6] = block_exclusive_scan(t, scan, &mine[7]);
}

// A stream, and the checked orders: every test runs under each.
class SimtRaceCheck : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    order_.emplace(*simt::parse_order(GetParam()));
    stream_ = h2o::gpu::create_stream();
  }
  void TearDown() override { h2o::gpu::destroy_stream(stream_); }
  h2o::gpu::Stream stream() const { return stream_; }

 private:
  std::optional<simt::ScopedOrder> order_;
  h2o::gpu::Stream stream_ = nullptr;
};

TEST_P(SimtRaceCheck, AMissingSyncthreadsIsReportedWithKernelArrayAndThreads) {
  std::vector<int> out(kThreads);
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), neighbour_kernel<false>)(out.data());
  std::vector<simt::RaceReport> found;
  for (const simt::RaceReport& r : races.reports())
    if (r.first_thread >= 0) found.push_back(r);
  ASSERT_EQ(found.size(), 1u) << "one race reported per array and launch";
  const simt::RaceReport& r = found[0];
  EXPECT_EQ(r.kernel, "neighbour_kernel<false>");
  EXPECT_EQ(r.array, "slots");
  EXPECT_EQ(r.function, "neighbour_kernel");
  // Whichever ran first, the two threads are neighbours and one of them wrote.
  const int lo = std::min(r.first_thread, r.second_thread), hi = std::max(r.first_thread, r.second_thread);
  EXPECT_TRUE(hi == lo + 1 || (lo == 0 && hi == kThreads - 1)) << r.what();
  EXPECT_EQ(r.element, size_t(hi == lo + 1 ? hi : lo));
  EXPECT_EQ(r.byte_offset, r.element * sizeof(int));
  EXPECT_TRUE(r.first == simt::Access::Write || r.second == simt::Access::Write);
  const std::string what = r.what();
  for (const char* part : {"neighbour_kernel<false>", "`slots`", "no barrier between"})
    EXPECT_NE(what.find(part), std::string::npos) << what;
}

TEST_P(SimtRaceCheck, WithTheBarrierNothingIsReported) {
  std::vector<int> out(kThreads);
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(3), dim3(kThreads), stream(), neighbour_kernel<true>)(out.data());
  EXPECT_TRUE(races.reports().empty()) << races.reports()[0].what();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(out[size_t(t)], 10 * ((t + 1) % kThreads));
}

TEST_P(SimtRaceCheck, AWarpBarrierOrdersLanesOfOneWarpOnly) {
  std::vector<int> out(kThreads);
  {
    simt::RaceRecorder races;
    H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), after_shuffle_kernel)(out.data(), false);
    EXPECT_TRUE(races.reports().empty()) << races.reports()[0].what();
  }
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), after_shuffle_kernel)(out.data(), true);
  bool raced = false;
  for (const simt::RaceReport& r : races.reports())
    raced |= r.first_thread >= 0 && r.array == "box" && (r.first_thread >> 5) != (r.second_thread >> 5);
  EXPECT_TRUE(raced) << "lanes of two warps are not ordered by a shuffle";
}

TEST_P(SimtRaceCheck, AtomicsAmongThemselvesAreNotARaceButAPlainReadAmongThemIs) {
  std::vector<int> values(200), out(5, 0);
  for (size_t i = 0; i < values.size(); ++i) values[i] = int(i * 7);
  {
    simt::RaceRecorder races;
    H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), histogram_kernel)(values.data(), int(values.size()), out.data(),
                                                                     false);
    EXPECT_TRUE(races.reports().empty()) << races.reports()[0].what();
    EXPECT_EQ(out[0] + out[1] + out[2] + out[3], 200);
  }
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), histogram_kernel)(values.data(), int(values.size()), out.data(), true);
  ASSERT_EQ(races.reports().size(), 1u);
  const simt::RaceReport& r = races.reports()[0];
  EXPECT_EQ(r.array, "counts");
  EXPECT_EQ(r.element, 0u);
  EXPECT_TRUE((r.first == simt::Access::Atomic && r.second == simt::Access::Read && r.second_thread == 5) ||
              (r.first == simt::Access::Read && r.first_thread == 5 && r.second == simt::Access::Atomic))
      << r.what();
}

TEST_P(SimtRaceCheck, ASharedScalarIsCheckedAsAnArrayIs) {
  std::vector<int> out(kThreads);
  {
    simt::RaceRecorder races;
    H2O_LAUNCH(dim3(2), dim3(kThreads), stream(), broadcast_kernel<true>)(out.data());
    EXPECT_TRUE(races.reports().empty()) << races.reports()[0].what();
    for (int v : out) EXPECT_EQ(v, 42);
  }
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), broadcast_kernel<false>)(out.data());
  bool raced = false;
  for (const simt::RaceReport& r : races.reports())
    raced |= r.first_thread >= 0 && r.array == "value" && (r.first_thread == 0 || r.second_thread == 0);
  EXPECT_TRUE(raced);
}

TEST_P(SimtRaceCheck, AReadOfAnElementTheBlockNeverWroteIsReported) {
  std::vector<float> out(kThreads);
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), unwritten_kernel)(out.data());
  ASSERT_EQ(races.reports().size(), 1u);
  const simt::RaceReport& r = races.reports()[0];
  EXPECT_EQ(r.array, "table");
  EXPECT_LT(r.first_thread, 0);
  EXPECT_EQ(r.second_thread, 7);
  EXPECT_EQ(r.element, size_t(kThreads + 7)) << "row 1, column 7 of [2][64]";
  EXPECT_NE(r.what().find("before any thread of the block wrote it"), std::string::npos) << r.what();
}

TEST_P(SimtRaceCheck, AReductionWithoutItsBarrierIsReportedInItsHelper) {
  std::vector<int> out(kThreads);
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(1), dim3(kThreads), stream(), broken_sum_kernel)(out.data());
  bool raced = false;
  for (const simt::RaceReport& r : races.reports())
    raced |= r.first_thread >= 0 && r.kernel == "broken_sum_kernel" && r.array == "warp_sums";
  EXPECT_TRUE(raced);
}

TEST_P(SimtRaceCheck, TheKernelsBlockHelpersAreCleanUsedTwiceInARow) {
  std::vector<int> out(size_t(kHelperResults * kThreads));
  simt::RaceRecorder races;
  H2O_LAUNCH(dim3(2), dim3(kThreads), stream(), block_helpers_kernel)(out.data());
  EXPECT_TRUE(races.reports().empty()) << races.reports()[0].what();
  const int sum = kThreads * (kThreads - 1) / 2;
  for (int t = 0; t < kThreads; ++t) {
    const int* mine = out.data() + kHelperResults * t;
    EXPECT_EQ(std::vector<int>(mine, mine + kHelperResults),
              (std::vector<int>{sum, kThreads, 6, 0, t, kThreads, t * (t - 1) / 2, sum}))
        << "thread " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Orders, SimtRaceCheck, ::testing::Values("forward", "reverse", "shuffle:1", "shuffle:2"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == ':') c = '_';
                           return name;
                         });

// Without a handler a race stops the program with the report.
TEST(SimtRaceCheckDeathTest, ByDefaultARaceAbortsWithTheReport) {
  std::vector<int> out(kThreads);
  h2o::gpu::Stream s = h2o::gpu::create_stream();
  EXPECT_DEATH(H2O_LAUNCH(dim3(1), dim3(kThreads), s, neighbour_kernel<false>)(out.data()),
               "neighbour_kernel<false>.*`slots`");
  h2o::gpu::destroy_stream(s);
}

}  // namespace
