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
  // At most one snapshot every kIntervalMs: ~25 a second, a screen's worth;
  // while the run's sinks fall behind the engine, one every kBehindIntervalMs
  // (snapshots thin first: building one holds the sinks up), so the window still moves.
  static constexpr int64_t kIntervalMs = 40;
  static constexpr int64_t kBehindIntervalMs = 250;
  // Whether a snapshot is due at `now_ms` (the caller's monotonic clock);
  // if so, it counts as built. `force`: always (a pause, a seek, a new view);
  // `unread`: the window has not taken the previous one yet, so no new one
  // is built until it has; `behind`: the sinks are behind (StudioRun::behind).
  bool due(int64_t now_ms, bool force, bool unread, bool behind = false) {
    const int64_t interval = behind ? kBehindIntervalMs : kIntervalMs;
    if (!force && (now_ms - last_ms_ < interval || unread)) return false;
    last_ms_ = now_ms;
    return true;
  }

 private:
  int64_t last_ms_ = std::numeric_limits<int64_t>::min() / 2;
};

}  // namespace h2o
