#pragma once
// The arithmetic behind H2O Studio's pictures, free of Qt so that it runs on
// the engine's thread, in replays and in unit tests: attention matrices
// aligned by stream position, survival rasters, score-rank curves with a
// power-law fit. Widgets only draw the results. (Token fates are the
// policies' own: core/policy/fate.h.)
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "core/policy/fate.h"
#include "core/runtime/capture.h"

namespace h2o {

// ---- attention ------------------------------------------------------------

// These read captures of every query head (kAllHeads), as the app records them.

// The heatmap's columns for one capture: the key positions of the query head's
// KV head (head >= 0) or of all KV heads merged (head < 0, "mean over heads"),
// ascending. More than `max_columns`: the first `keep_first` and the latest rest.
std::vector<int32_t> attention_columns(const AttentionCapture& capture, int head, int group_size, int max_columns,
                                       int keep_first);

// Appends the capture's rows, aligned on `columns`, to `out` (row-major,
// capture.rows x columns.size()). A key the head did not attend reads NaN for
// one head; for the mean over heads (head < 0) a head that no longer holds the
// key contributes 0, and NaN only marks keys no head holds.
void append_attention_rows(const AttentionCapture& capture, int head, int group_size,
                           std::span<const int32_t> columns, std::vector<double>& out);

// Which of n labels to draw when only some fit: indices by descending
// importance (NaN counts as least important; ties go to the lower index), each
// at least `min_gap` indices away from every one already taken. Returned
// ascending. A heatmap uses it to name its brightest columns first.
std::vector<int> spaced_by_importance(std::span<const double> importance, int min_gap);

// ---- heavy hitters ----------------------------------------------------------

struct PowerLawFit {
  double slope = NAN;      // d log(score) / d log(rank)
  double intercept = NAN;  // log(score) at rank 1
  int points = 0;          // positive values fitted
};
// Least squares of log(value) on log(rank) over the positive values.
PowerLawFit fit_power_law(std::span<const double> ranks, std::span<const double> values);

struct ScoreRank {
  std::vector<double> rank, score;  // descending scores, rank 1..n (thinned to max_points for drawing)
  PowerLawFit fit;                  // fitted on every positive score
  std::vector<double> fit_rank, fit_score;  // the fitted line's ends, for drawing
};
ScoreRank score_rank(std::span<const float> scores, int max_points);

// ---- survival ---------------------------------------------------------------

// Who was held at each of the latest steps: rows are steps (oldest first),
// columns stream positions, each cell a Fate.
struct SurvivalRaster {
  int64_t first_step = 0;
  int steps = 0;
  int64_t first_position = 0;
  int positions = 0;
  std::vector<uint8_t> cells;  // steps x positions, row-major
  Fate at(int row, int column) const { return Fate(cells[size_t(row) * positions + column]); }
};
// `birth_step[p]`: the step that fed position p (non-decreasing in p);
// `evict_step[p]`: the step whose cut evicted it, -1 while held. Shows steps
// (last_step - max_steps, last_step] and the latest `max_positions` positions.
SurvivalRaster survival_raster(const EvictionRule& rule, std::span<const int64_t> birth_step,
                               std::span<const int64_t> evict_step, int64_t last_step, int max_steps,
                               int max_positions);

}  // namespace h2o
