#pragma once
// How often a run's pictures are rebuilt for the window: the app's worker
// and h2o-bench-studio both ask this one rule, so the benchmark builds
// snapshots exactly as often as the app does. Building one costs the
// worker's time; more than the window can draw is wasted.
#include <cstdint>
#include <limits>

namespace h2o {

class SnapshotCadence {
 public:
  // At most one snapshot every kIntervalMs: ~25 a second, a screen's worth.
  static constexpr int64_t kIntervalMs = 40;
  // Whether a snapshot is due at `now_ms` (the caller's monotonic clock);
  // if so, it counts as built. `force`: always (a pause, a seek, a new view);
  // `unread`: the window has not taken the previous one yet, so no new one
  // is built until it has.
  bool due(int64_t now_ms, bool force, bool unread) {
    if (!force && (now_ms - last_ms_ < kIntervalMs || unread)) return false;
    last_ms_ = now_ms;
    return true;
  }

 private:
  int64_t last_ms_ = std::numeric_limits<int64_t>::min() / 2;
};

}  // namespace h2o
