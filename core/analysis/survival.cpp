#include "core/analysis/survival.h"

#include <algorithm>
#include <limits>

#include "core/analysis/head_summary.h"

namespace h2o {

namespace {

// Columns bin [a, end) in whole units of u positions (the first and last cut
// short where a or end is not on a unit's edge): the range's units, and the
// first position of its k-th of m columns.
int64_t units_in(int64_t a, int64_t end, int64_t u) { return (end + u - 1) / u - a / u; }
int64_t bin_first(int64_t a, int64_t end, int64_t u, int64_t k, int64_t m) {
  if (k >= m) return end;
  return std::clamp((a / u + units_in(a, end, u) * k / m) * u, a, end);
}
// The inverse: the last of the m columns whose first position is at or before p.
int bin_of(int64_t a, int64_t end, int64_t u, int64_t p, int64_t m) {
  const int64_t n = std::max<int64_t>(1, units_in(a, end, u)), j = p / u - a / u;
  return int(std::min(m - 1, ((j + 1) * m - 1) / n));
}

// A cell shows the highest level covering it: levels in rising order, each
// overwriting, a whole row of columns at a time (the inner loop vectorizes).
// `diff`: per level (fate_priority), the difference array over rows x columns.
void paint_cells(SurvivalRaster& r, const int32_t* diff, size_t level_size) {
  static constexpr Fate kByLevel[] = {Fate::Unborn, Fate::Evicted, Fate::Cached, Fate::Recent, Fate::Heavy, Fate::Sink};
  const size_t cols = size_t(r.cols);
  r.cells.assign(size_t(r.rows) * cols, uint8_t(Fate::Unborn));
  std::vector<int32_t> running(cols);
  for (int level = 1; level < int(std::size(kByLevel)); ++level) {
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
}

}  // namespace

int64_t SurvivalRaster::column_first(int col) const {
  if (cols <= 0) return first_position;
  if (sinks_end > first_position) {
    if (col <= 0) return first_position;
    return bin_first(sinks_end, end_position, position_unit, col - 1, cols - 1);
  }
  return bin_first(first_position, end_position, position_unit, col, cols);
}

int SurvivalRaster::column_of(int64_t position) const {
  if (cols <= 0) return 0;
  position = std::clamp(position, first_position, std::max(first_position, end_position - 1));
  if (sinks_end > first_position) {
    if (position < sinks_end) return 0;
    return 1 + bin_of(sinks_end, end_position, position_unit, position, cols - 1);
  }
  return bin_of(first_position, end_position, position_unit, position, cols);
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
                               int64_t first_step, int64_t last_step, int max_cols, int max_rows,
                               const HeadSummary* summary, int64_t head) {
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
  const int64_t summarised_end = summary ? std::min(summary->end(), r.end_position) : 0;
  if (summarised_end > r.first_position) r.position_unit = HeadSummary::kGroup;
  r.cols = int(std::min<int64_t>(max_cols, units_in(r.first_position, r.end_position, r.position_unit)));
  r.rows = int(std::min<int64_t>(max_rows, r.steps()));
  // Binned positions: the sinks keep a column of their own (what sits right after them is often a heavy hitter).
  if (r.cols < r.positions() && r.cols >= 2 && rule.evicts() && rule.sinks > r.first_position &&
      rule.sinks < r.end_position) {
    r.sinks_end = rule.sinks;
    r.cols = int(std::min<int64_t>(r.cols, 1 + units_in(r.sinks_end, r.end_position, r.position_unit)));
  }
  const int64_t n_steps = r.steps();

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
  const auto one_position = [&](int64_t p, int32_t evicted_step) {
    const int64_t b = birth[size_t(p)];
    const int64_t later = p + rule.recent;
    const int64_t recent_end = later < known ? int64_t(birth[size_t(later)]) : kNeverStep;
    const int col = r.column_of(p);
    position_fates(rule, p, b, recent_end, evicted_step < 0 ? kNeverStep : int64_t(evicted_step),
                   [&](Fate fate, int64_t from, int64_t to) { cover(col, fate, from, to); });
  };
  if (summarised_end > r.first_position) {
    // A span stands for a group's positions past the sinks (the sinks are kept exactly).
    summary->for_each_span(head, r.first_position, summarised_end, rule, birth.first(size_t(known)),
                           [&](int64_t p, Fate fate, int64_t from, int64_t to) {
                             cover(r.column_of(std::max(p, r.sinks_end)), fate, from, to < 0 ? kNeverStep : to);
                           });
    summary->for_each_exact(head, r.first_position, summarised_end, one_position);
  }
  for (int64_t p = std::max(r.first_position, summarised_end); p < r.end_position; ++p) {
    if (birth[size_t(p)] > r.last_step) break;  // births are in position order: the rest are unborn too
    one_position(p, evicted[size_t(p)]);
  }
  paint_cells(r, diff.data(), level_size);
  return r;
}

}  // namespace h2o
