#pragma once
// The arithmetic behind H2O Studio's pictures, free of Qt so that it runs on
// the engine's thread, in replays and in unit tests: attention matrices
// aligned by stream position, score-rank curves with a power-law fit, curve
// ranges. (Survival rasters: survival.h.) Widgets only draw the results. (Token fates are the
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

// Sorted distinct positions of the key lists (a capture's KV heads, or one KV
// head in several captures). More than `max_columns`: the first `keep_first`
// and the latest rest.
std::vector<int32_t> union_columns(std::span<const std::span<const int32_t>> key_lists, int max_columns,
                                   int keep_first);

// The heatmap's columns for one capture: the key positions of the query head's
// KV head (head >= 0) or of all KV heads merged (head < 0, "mean over heads"),
// ascending. More than `max_columns`: the first `keep_first` and the latest rest.
std::vector<int32_t> attention_columns(const AttentionCapture& capture, int head, int group_size, int max_columns,
                                       int keep_first);

// Where a list of positions (a KV head's keys, or a cache state's positions)
// falls among ascending `columns`, in list order: runs of consecutive
// positions on consecutive columns (list[index + j] is column `column + j`
// for j < length). Cheapest when the list ascends, as the backends write it;
// its latest positions then make one long run.
struct ColumnRun {
  uint32_t index, column, length;
};
void find_columns(std::span<const int32_t> positions, std::span<const int32_t> columns, std::vector<ColumnRun>& out);

// Appends the capture's rows, aligned on ascending `columns`, to `out` (row-major,
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

// ---- curves ------------------------------------------------------------------

// A y range for curves whose first points rest on a handful of samples (a
// running perplexity after two tokens, a rate after one): the range of every
// point past the first `skip_fraction` of each series' x span (at least its
// first `skip_points`), padded by 5 %. Both NaN when there is nothing to fit.
struct YRange {
  double lower = NAN, upper = NAN;
};
YRange robust_y_range(const std::vector<std::vector<double>>& xs, const std::vector<std::vector<double>>& ys,
                      double skip_fraction, int skip_points);

// Means of consecutive runs of points, so that at most `max_points` remain:
// a noisy per-step curve drawn as a line instead of a solid band.
void binned_means(const std::vector<double>& x, const std::vector<double>& y, int max_points,
                  std::vector<double>& out_x, std::vector<double>& out_y);

}  // namespace h2o
