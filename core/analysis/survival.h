#pragma once
// Survival rasters over a whole stream: which positions a cache held at each
// step, and in which role. A position's life is a few intervals of steps —
// unborn, recent, held for its score (or merely cached), evicted; a sink is a
// sink until it leaves — so a raster of any stretch of positions and steps is
// drawn from the intervals alone, binned to the pixels there are. A cell that
// covers several positions or steps shows the most telling fate any of them
// held (sink, then held for its score, recent, cached, evicted, unborn), and
// when positions are binned the sinks get a column of their own, so that the
// sink column and a heavy hitter's stripe stay visible at any zoom (heavy
// hitters often sit right after the sinks).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/policy/fate.h"

namespace h2o {

class HeadSummary;

inline constexpr int64_t kNeverStep = std::numeric_limits<int64_t>::max();

// The fates position p held, as intervals of steps: cover(fate, from, to) for
// [from, to) (to == kNeverStep: still; an empty interval may be passed).
// `recent_end`: the birth of the position `rule.recent` after p (kNeverStep
// while unfed); `evicted`: the step that let p go (kNeverStep while held).
// The one rule the rasters and the per-head summary (head_summary.h) share.
template <class Cover>
void position_fates(const EvictionRule& rule, int64_t p, int64_t birth, int64_t recent_end, int64_t evicted,
                    Cover&& cover) {
  cover(Fate::Evicted, evicted, kNeverStep);
  if (!rule.evicts()) {
    cover(Fate::Cached, birth, evicted);
  } else if (p < rule.sinks) {
    cover(Fate::Sink, birth, evicted);
  } else {
    // Recent until the position `recent` places later is fed.
    cover(Fate::Recent, birth, std::min(recent_end, evicted));
    cover(rule.by_score > 0 ? Fate::Heavy : Fate::Cached, std::max(birth, recent_end), evicted);
  }
}

struct SurvivalRaster {
  int64_t first_step = 0, last_step = -1;        // rows cover the steps [first_step, last_step]
  int64_t first_position = 0, end_position = 0;  // columns cover the positions [first_position, end_position)
  int64_t sinks_end = 0;  // > first_position: column 0 holds exactly the sinks [first_position, sinks_end)
  // Columns bin whole runs of this many positions (counted from position 0;
  // the first and last may be cut short): > 1 where the raster reads a
  // per-head summary (head_summary.h), whose groups it cannot split.
  int64_t position_unit = 1;
  int rows = 0, cols = 0;
  std::vector<uint8_t> cells;  // rows x cols, row-major, each a Fate
  Fate at(int row, int col) const { return Fate(cells[size_t(row) * size_t(cols) + size_t(col)]); }
  int64_t steps() const { return last_step - first_step + 1; }
  int64_t positions() const { return end_position - first_position; }
  // The first position of a column (col == cols: end_position), and the column of a position.
  int64_t column_first(int col) const;
  int column_of(int64_t position) const;
  bool binned() const { return cols < positions() || rows < steps(); }
};

// The order in which fates win a shared cell (higher wins).
int fate_priority(Fate fate);

// The raster of positions [first_position, end_position) over steps
// [first_step, last_step], in at most max_cols x max_rows cells.
// `birth[p]`: the step that fed position p (non-decreasing, the whole stream
// so far); `evicted[p]`: the step whose cut evicted it from the shown
// (layer, KV head), or -1 while held. Steps after last_step are not looked at.
// With `summary` (head `head` of it): positions before summary->end() are
// read from it and their `evicted` entries are not looked at; the columns
// then bin whole groups of its positions.
SurvivalRaster survival_raster(const EvictionRule& rule, std::span<const int32_t> birth,
                               std::span<const int32_t> evicted, int64_t first_position, int64_t end_position,
                               int64_t first_step, int64_t last_step, int max_cols, int max_rows,
                               const HeadSummary* summary = nullptr, int64_t head = 0);

}  // namespace h2o
