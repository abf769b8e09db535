#include "core/studio/survival.h"

#include <algorithm>
#include <limits>

namespace h2o {

int64_t SurvivalRaster::column_first(int col) const {
  if (cols <= 0) return first_position;
  if (sinks_end > first_position) {
    if (col <= 0) return first_position;
    return sinks_end + (end_position - sinks_end) * (col - 1) / std::max(1, cols - 1);
  }
  return first_position + positions() * col / cols;
}

int SurvivalRaster::column_of(int64_t position) const {
  if (cols <= 0) return 0;
  position = std::clamp(position, first_position, std::max(first_position, end_position - 1));
  // The last column whose first position is at or before `position` (the inverse of column_first).
  if (sinks_end > first_position) {
    if (position < sinks_end) return 0;
    const int64_t n = std::max<int64_t>(1, end_position - sinks_end), m = cols - 1;
    return std::min(cols - 1, 1 + int(((position - sinks_end + 1) * m - 1) / n));
  }
  const int64_t n = std::max<int64_t>(1, positions());
  return std::min(cols - 1, int(((position - first_position + 1) * cols - 1) / n));
}

int fate_priority(Fate fate) {
  switch (fate) {
    case Fate::Unborn: return 0;
    case Fate::Evicted: return 1;
    case Fate::Cached: return 2;
    case Fate::Recent: return 3;
    case Fate::Heavy: return 4;
    case Fate::Sink: return 5;
  }
  return 0;
}

SurvivalRaster survival_raster(const EvictionRule& rule, std::span<const int32_t> birth,
                               std::span<const int32_t> evicted, int64_t first_position, int64_t end_position,
                               int64_t first_step, int64_t last_step, int max_cols, int max_rows) {
  SurvivalRaster r;
  const int64_t known = int64_t(std::min(birth.size(), evicted.size()));
  r.first_position = std::clamp<int64_t>(first_position, 0, known);
  r.end_position = std::clamp<int64_t>(end_position, r.first_position, known);
  r.first_step = std::max<int64_t>(0, first_step);
  r.last_step = std::max<int64_t>(r.first_step - 1, last_step);
  if (r.positions() <= 0 || r.steps() <= 0 || max_cols < 1 || max_rows < 1) {
    r.cols = r.rows = 0;
    return r;
  }
  r.cols = int(std::min<int64_t>(max_cols, r.positions()));
  r.rows = int(std::min<int64_t>(max_rows, r.steps()));
  // Binned positions: the sinks keep a column of their own (what sits right after them is often a heavy hitter).
  if (r.cols < r.positions() && r.cols >= 2 && rule.evicts() && rule.sinks > r.first_position &&
      rule.sinks < r.end_position)
    r.sinks_end = rule.sinks;
  const int64_t n_steps = r.steps();
  const int64_t never = std::numeric_limits<int64_t>::max();

  // Per fate level, a difference array over rows x columns (row-major, one
  // row more): +1 where an interval starts covering a row, -1 after its last row.
  constexpr int kLevels = 6;
  const size_t cols = size_t(r.cols), level_size = (size_t(r.rows) + 1) * cols;
  // Kept per thread: rasters are built every frame, and a buffer this size,
  // freed each time, would be mapped afresh (page faults) every time.
  thread_local std::vector<int32_t> diff;
  diff.assign(size_t(kLevels) * level_size, 0);
  const auto row_of = [&](int64_t step) { return size_t((step - r.first_step) * r.rows / n_steps); };
  const auto cover = [&](int col, Fate fate, int64_t from, int64_t to) {  // steps [from, to)
    from = std::max(from, r.first_step);
    to = std::min(to, r.last_step + 1);
    if (from >= to) return;
    int32_t* d = &diff[size_t(fate_priority(fate)) * level_size + size_t(col)];
    d[row_of(from) * cols] += 1;
    d[(row_of(to - 1) + 1) * cols] -= 1;
  };
  const Fate scored = rule.by_score > 0 ? Fate::Heavy : Fate::Cached;
  for (int64_t p = r.first_position; p < r.end_position; ++p) {
    const int64_t b = birth[size_t(p)];
    if (b > r.last_step) break;  // births are in position order: the rest are unborn too
    const int col = r.column_of(p);
    const int64_t e = evicted[size_t(p)] < 0 ? never : int64_t(evicted[size_t(p)]);
    cover(col, Fate::Evicted, e, never);
    if (!rule.evicts()) {
      cover(col, Fate::Cached, b, e);
    } else if (p < rule.sinks) {
      cover(col, Fate::Sink, b, e);
    } else {
      // Recent until the position `recent` places later is fed.
      const int64_t later = p + rule.recent;
      const int64_t recent_end = later < known ? int64_t(birth[size_t(later)]) : never;
      cover(col, Fate::Recent, b, std::min(recent_end, e));
      cover(col, scored, std::max(b, recent_end), e);
    }
  }
  r.cells.assign(size_t(r.rows) * cols, uint8_t(Fate::Unborn));
  static constexpr Fate kByLevel[kLevels] = {Fate::Unborn, Fate::Evicted, Fate::Cached,
                                             Fate::Recent, Fate::Heavy,   Fate::Sink};
  // A cell shows the highest level covering it: levels in rising order, each
  // overwriting, a whole row of columns at a time (the inner loop vectorizes).
  std::vector<int32_t> running(cols);
  for (int level = 1; level < kLevels; ++level) {
    std::fill(running.begin(), running.end(), 0);
    const int32_t* d = &diff[size_t(level) * level_size];
    const uint8_t fate = uint8_t(kByLevel[level]);
    for (size_t row = 0; row < size_t(r.rows); ++row) {
      uint8_t* cells = &r.cells[row * cols];
      for (size_t c = 0; c < cols; ++c) {
        running[c] += d[row * cols + c];
        if (running[c] > 0) cells[c] = fate;
      }
    }
  }
  return r;
}

}  // namespace h2o
