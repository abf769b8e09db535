#include "core/analysis/analytics.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <iterator>
#include <numeric>

namespace h2o {

// ---- attention ------------------------------------------------------------

static std::vector<int32_t> keep_first_and_latest(std::vector<int32_t> sorted, int max_count, int keep_first) {
  if (max_count <= 0 || int(sorted.size()) <= max_count) return sorted;
  keep_first = std::clamp(keep_first, 0, max_count);
  std::vector<int32_t> out(sorted.begin(), sorted.begin() + keep_first);
  out.insert(out.end(), sorted.end() - (max_count - keep_first), sorted.end());
  return out;
}

// Without an early exit, so that it vectorizes: snapshots check every key list they read.
static bool strictly_ascending(std::span<const int32_t> list) {
  int32_t falls = 0;
  for (size_t i = 1; i < list.size(); ++i) falls |= list[i - 1] >= list[i];
  return falls == 0;
}

// Sorted distinct positions of the lists. Lists that ascend strictly (as the
// backends write a KV head's keys) are merged in one pass each, far cheaper
// than sorting their concatenation, which any other list falls back to.
static std::vector<int32_t> sorted_union(std::span<const std::span<const int32_t>> lists) {
  size_t total = 0;
  for (std::span<const int32_t> list : lists) total += list.size();
  std::vector<int32_t> out, merged;
  out.reserve(total);
  merged.reserve(total);
  for (std::span<const int32_t> list : lists) {
    if (!strictly_ascending(list)) {
      out.clear();
      for (std::span<const int32_t> l : lists) out.insert(out.end(), l.begin(), l.end());
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    }
    merged.clear();
    std::set_union(out.begin(), out.end(), list.begin(), list.end(), std::back_inserter(merged));
    out.swap(merged);
  }
  return out;
}

std::vector<int32_t> union_columns(std::span<const std::span<const int32_t>> key_lists, int max_columns,
                                   int keep_first) {
  return keep_first_and_latest(sorted_union(key_lists), max_columns, keep_first);
}

std::vector<int32_t> attention_columns(const AttentionCapture& capture, int head, int group_size, int max_columns,
                                       int keep_first) {
  std::vector<std::span<const int32_t>> lists;
  const int kv_heads = int(capture.key_positions.size());
  if (head >= 0) {
    const int kv = head / std::max(group_size, 1);
    if (kv < kv_heads) lists.emplace_back(capture.key_positions[size_t(kv)]);
  } else {
    lists.assign(capture.key_positions.begin(), capture.key_positions.end());
  }
  return union_columns(lists, max_columns, keep_first);
}

// The first index at or after `from` whose position is >= p, in ascending
// positions: steps of doubling length, then a binary search within the last.
static size_t gallop(std::span<const int32_t> positions, size_t from, int32_t p) {
  size_t lo = from, hi = from + 1;
  while (hi < positions.size() && positions[hi - 1] < p) {
    lo = hi;
    hi = from + 2 * (hi - from);
  }
  hi = std::min(hi, positions.size());
  return size_t(std::lower_bound(positions.begin() + long(lo), positions.begin() + long(hi), p) - positions.begin());
}

// Position `i` found on column `c` (positions in any order): the last run grows where both follow it.
static void add_to_runs(size_t i, size_t c, std::vector<ColumnRun>& runs) {
  if (!runs.empty()) {
    ColumnRun& last = runs.back();
    if (last.index + last.length == i && last.column + last.length == c) {
      last.length += 1;
      return;
    }
  }
  runs.push_back({uint32_t(i), uint32_t(c), 1});
}

void find_columns(std::span<const int32_t> positions, std::span<const int32_t> columns, std::vector<ColumnRun>& out) {
  out.clear();
  if (!strictly_ascending(positions)) {
    for (size_t i = 0; i < positions.size(); ++i) {
      const auto it = std::lower_bound(columns.begin(), columns.end(), positions[i]);
      if (it != columns.end() && *it == positions[i]) add_to_runs(i, size_t(it - columns.begin()), out);
    }
    return;
  }
  // Both ascend: each column is looked for past the last one found. Most of
  // a capture's keys lie between its first and its latest, which the columns
  // skip: galloping passes them in a few steps. Runs of columns that are
  // runs of keys (the latest) cost a comparison each.
  size_t i = 0, c = 0;
  while (c < columns.size() && i < positions.size()) {
    if (positions[i] < columns[c]) i = gallop(positions, i, columns[c]);
    if (i == positions.size()) break;
    if (positions[i] != columns[c]) {
      ++c;
      continue;
    }
    const size_t run_index = i, run_column = c;
    for (; i < positions.size() && c < columns.size() && positions[i] == columns[c]; ++i, ++c) {}
    out.push_back({uint32_t(run_index), uint32_t(run_column), uint32_t(i - run_index)});
  }
}

// Adds one captured head's rows into `out` (rows x cols, from its start) on
// the columns `runs` name; `mean_over` > 0: its share of the mean over that
// many heads. A cell gets the head's keys in key order, as it always did, so
// sums stay the same bit for bit; within a run the cells differ, so it vectorizes.
static void add_head_rows(std::span<const float> probs, size_t keys, int rows, std::span<const ColumnRun> runs,
                          int mean_over, size_t cols, double* out) {
  for (int r = 0; r < rows; ++r) {
    for (const ColumnRun& run : runs) {
      const float* p = probs.data() + size_t(r) * keys + run.index;
      double* cells = out + size_t(r) * cols + run.column;
      for (size_t j = 0; j < run.length; ++j) {
        const double share = mean_over > 0 ? double(p[j]) / mean_over : double(p[j]);
        cells[j] = (std::isnan(cells[j]) ? 0.0 : cells[j]) + share;
      }
    }
  }
}

void append_attention_rows(const AttentionCapture& capture, int head, int group_size,
                           std::span<const int32_t> columns, std::vector<double>& out) {
  const size_t cols = columns.size();
  const size_t base = out.size();
  out.resize(base + size_t(capture.rows) * cols, NAN);
  const int heads = int(capture.probs.size());
  const int group = std::max(group_size, 1);
  // One head, or every head in order (the mean's sums depend on it).
  const int first = std::max(head, 0), end = head >= 0 ? std::min(head + 1, heads) : heads;
  // A group's query heads share their KV head's columns. A snapshot calls
  // this thousands of times (the model view): the scratch is kept.
  thread_local std::vector<ColumnRun> runs;
  int runs_kv = -1;
  for (int h = first; h < end; ++h) {
    const int kv = h / group;
    if (kv >= int(capture.key_positions.size())) continue;
    const auto& keys = capture.key_positions[size_t(kv)];
    const auto& probs = capture.probs[size_t(h)];
    if (probs.size() < size_t(capture.rows) * keys.size()) continue;
    if (kv != runs_kv) {
      find_columns(keys, columns, runs);
      runs_kv = kv;
    }
    add_head_rows(probs, keys.size(), capture.rows, runs, head >= 0 ? 0 : heads, cols, out.data() + base);
  }
}

// ---- heavy hitters ----------------------------------------------------------

PowerLawFit fit_power_law(std::span<const double> ranks, std::span<const double> values) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (size_t i = 0; i < std::min(ranks.size(), values.size()); ++i) {
    if (!(values[i] > 0) || !(ranks[i] > 0)) continue;
    const double x = std::log(ranks[i]), y = std::log(values[i]);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
    ++n;
  }
  PowerLawFit fit;
  fit.points = n;
  const double denom = n * sxx - sx * sx;
  if (n < 2 || denom <= 0) return fit;
  fit.slope = (n * sxy - sx * sy) / denom;
  fit.intercept = (sy - fit.slope * sx) / n;
  return fit;
}

// A float's bits as a key that orders descending values ascending (NaN
// aside); its own inverse, so the same function turns keys back into bits.
static uint32_t descending_key(uint32_t bits) { return bits >> 31 ? bits : ~bits & 0x7fffffffu; }

// LSD radix sort, three passes of 11 bits.
static void radix_sort(std::vector<uint32_t>& keys) {
  std::vector<uint32_t> other(keys.size());
  for (int shift = 0; shift < 32; shift += 11) {
    std::array<size_t, 2049> at{};
    for (uint32_t k : keys) ++at[((k >> shift) & 2047) + 1];
    std::partial_sum(at.begin(), at.end(), at.begin());
    for (uint32_t k : keys) other[at[(k >> shift) & 2047]++] = k;
    keys.swap(other);
  }
}

// The scores in descending order, as doubles. Without NaNs and negative
// zeros, equal scores are equal bits and every sorted order is the same
// sequence: a radix sort of the bits gives std::sort's very result several
// times faster (a 7B cache's scores are tens of thousands a pane and frame).
static std::vector<double> sorted_descending(std::span<const float> scores) {
  const bool plain = std::none_of(scores.begin(), scores.end(),
                                  [](float s) { return std::isnan(s) || (s == 0 && std::signbit(s)); });
  if (!plain) {
    std::vector<double> sorted(scores.begin(), scores.end());
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    return sorted;
  }
  std::vector<uint32_t> keys(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) keys[i] = descending_key(std::bit_cast<uint32_t>(scores[i]));
  radix_sort(keys);
  std::vector<double> sorted(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) sorted[i] = std::bit_cast<float>(descending_key(keys[i]));
  return sorted;
}

ScoreRank score_rank(std::span<const float> scores, int max_points) {
  std::vector<double> sorted = sorted_descending(scores);
  std::vector<double> ranks(sorted.size());
  std::iota(ranks.begin(), ranks.end(), 1.0);
  ScoreRank out;
  out.fit = fit_power_law(ranks, sorted);
  if (!std::isnan(out.fit.slope)) {
    for (double r : {1.0, double(sorted.size())}) {
      out.fit_rank.push_back(r);
      out.fit_score.push_back(std::exp(out.fit.intercept) * std::pow(r, out.fit.slope));
    }
  }
  if (max_points <= 0 || int(sorted.size()) <= max_points) {
    out.rank = std::move(ranks);
    out.score = std::move(sorted);
    return out;
  }
  // Log-spaced ranks keep the log-log picture's shape with few points.
  const double top = std::log(double(sorted.size()));
  size_t last = 0;
  for (int i = 0; i < max_points; ++i) {
    const size_t r = size_t(std::lround(std::exp(top * i / (max_points - 1))));
    if (r <= last || r > sorted.size()) continue;
    out.rank.push_back(double(r));
    out.score.push_back(sorted[r - 1]);
    last = r;
  }
  return out;
}

// ---- curves ------------------------------------------------------------------

YRange robust_y_range(const std::vector<std::vector<double>>& xs, const std::vector<std::vector<double>>& ys,
                      double skip_fraction, int skip_points) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t k = 0; k < xs.size() && k < ys.size(); ++k) {
    const auto& x = xs[k];
    const auto& y = ys[k];
    const size_t n = std::min(x.size(), y.size());
    if (n == 0) continue;
    const double from = x.front() + (x[n - 1] - x.front()) * skip_fraction;
    for (size_t i = 0; i < n; ++i) {
      if ((int(i) < skip_points && n > size_t(skip_points)) || x[i] < from || !std::isfinite(y[i])) continue;
      lo = std::min(lo, y[i]);
      hi = std::max(hi, y[i]);
    }
  }
  YRange r;
  if (!(hi >= lo)) return r;
  const double pad = std::max((hi - lo) * 0.05, std::abs(hi) * 1e-3 + 1e-9);
  r.lower = lo - pad;
  r.upper = hi + pad;
  return r;
}

void binned_means(const std::vector<double>& x, const std::vector<double>& y, int max_points,
                  std::vector<double>& out_x, std::vector<double>& out_y) {
  out_x.clear();
  out_y.clear();
  const size_t n = std::min(x.size(), y.size());
  if (n == 0 || max_points < 1) return;
  const size_t per = (n + size_t(max_points) - 1) / size_t(max_points);
  for (size_t i = 0; i < n; i += per) {
    const size_t end = std::min(n, i + per);
    double sx = 0, sy = 0;
    for (size_t k = i; k < end; ++k) sx += x[k], sy += y[k];
    out_x.push_back(sx / double(end - i));
    out_y.push_back(sy / double(end - i));
  }
}

std::vector<int> spaced_by_importance(std::span<const double> importance, int min_gap) {
  const int n = int(importance.size());
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[size_t(i)] = i;
  auto key = [&](int i) { return std::isnan(importance[size_t(i)]) ? -INFINITY : importance[size_t(i)]; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) > key(b); });
  // taken[i]: a label sits at i; a candidate needs none within min_gap - 1 of it.
  std::vector<uint8_t> taken(size_t(n), 0);
  const int reach = std::max(0, min_gap - 1);
  std::vector<int> out;
  for (int i : order) {
    bool free = true;
    for (int j = std::max(0, i - reach); j <= std::min(n - 1, i + reach) && free; ++j) free = !taken[size_t(j)];
    if (!free) continue;
    taken[size_t(i)] = 1;
    out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace h2o
