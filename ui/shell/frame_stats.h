#pragma once
// Frame-time statistics for the GUI's --perf report: median, 95th percentile
// and maximum of the time spent drawing each snapshot.
#include <algorithm>
#include <cmath>
#include <vector>

namespace h2o {

struct FrameStats {
  size_t frames = 0;
  double median_ms = NAN, p95_ms = NAN, max_ms = NAN, mean_ms = NAN;
};

// Nearest-rank percentiles over the samples.
inline FrameStats frame_stats(std::vector<double> ms) {
  FrameStats s;
  s.frames = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double q) { return ms[std::min(ms.size() - 1, size_t(std::ceil(q * ms.size())) - (q > 0 ? 1 : 0))]; };
  s.median_ms = rank(0.5);
  s.p95_ms = rank(0.95);
  s.max_ms = ms.back();
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean_ms = sum / double(ms.size());
  return s;
}

}  // namespace h2o
