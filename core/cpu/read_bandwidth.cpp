#include "core/cpu/read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "core/base/huge_page_buffer.h"

namespace h2o::cpu {
namespace {

typedef float v16 __attribute__((vector_size(64)));

// Sums a range with four independent accumulators so that loads, not adds, set the pace.
float sum_lines(const float* p, size_t lines) {
  v16 a = {}, b = {}, c = {}, d = {};
  size_t i = 0;
  for (; i + 4 <= lines; i += 4) {
    v16 x, y, z, w;
    std::memcpy(&x, p + (i + 0) * 16, 64);
    std::memcpy(&y, p + (i + 1) * 16, 64);
    std::memcpy(&z, p + (i + 2) * 16, 64);
    std::memcpy(&w, p + (i + 3) * 16, 64);
    a += x, b += y, c += z, d += w;
  }
  for (; i < lines; ++i) {
    v16 x;
    std::memcpy(&x, p + i * 16, 64);
    a += x;
  }
  const v16 s = (a + b) + (c + d);
  float total = 0;
  for (int k = 0; k < 16; ++k) total += s[k];
  return total;
}

}  // namespace

double measure_read_bandwidth(size_t bytes, ThreadPool& pool) {
  const size_t lines = std::max<size_t>(bytes / 64, 1024);
  // On huge pages where the kernel allows, as the weights are (cpu_weights.h):
  // the rate the weights could be read at, not one a TLB miss every 4 KiB sets.
  HugePageBuffer memory(lines * 64);
  float* const buffer = reinterpret_cast<float*>(memory.data());
  std::fill(buffer, buffer + lines * 16, 1.0f);  // touch every page before timing
  const int chunks = pool.size() * 8;
  const size_t per_chunk = (lines + size_t(chunks) - 1) / size_t(chunks);
  std::atomic<float> sink{0};
  auto pass = [&] {
    pool.parallel_for(chunks, 1, [&](int begin, int end) {
      float local = 0;
      for (int c = begin; c < end; ++c) {
        const size_t first = size_t(c) * per_chunk, last = std::min(lines, first + per_chunk);
        if (first < last) local += sum_lines(buffer + first * 16, last - first);
      }
      sink.store(local, std::memory_order_relaxed);  // keeps the loads from being optimised away
    });
  };
  pass();
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(lines) * 64 / s / 1e9);
  }
  return best;
}

}  // namespace h2o::cpu
