#include "core/studio/analytics.h"

#include <algorithm>
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

std::vector<int32_t> attention_columns(const AttentionCapture& capture, int head, int group_size, int max_columns,
                                       int keep_first) {
  std::vector<int32_t> keys;
  const int kv_heads = int(capture.key_positions.size());
  if (head >= 0) {
    const int kv = head / std::max(group_size, 1);
    if (kv < kv_heads) keys = capture.key_positions[size_t(kv)];
  } else {
    for (const auto& k : capture.key_positions) keys.insert(keys.end(), k.begin(), k.end());
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keep_first_and_latest(std::move(keys), max_columns, keep_first);
}

void append_attention_rows(const AttentionCapture& capture, int head, int group_size,
                           std::span<const int32_t> columns, std::vector<double>& out) {
  const size_t cols = columns.size();
  const size_t base = out.size();
  out.resize(base + size_t(capture.rows) * cols, NAN);
  const int heads = int(capture.probs.size());
  const int group = std::max(group_size, 1);
  auto column_of = [&](int32_t position) -> long {
    const auto it = std::lower_bound(columns.begin(), columns.end(), position);
    return it != columns.end() && *it == position ? long(it - columns.begin()) : -1;
  };
  auto add_head = [&](int h, bool mean) {
    const int kv = h / group;
    if (kv >= int(capture.key_positions.size())) return;
    const auto& keys = capture.key_positions[size_t(kv)];
    const auto& probs = capture.probs[size_t(h)];
    if (probs.size() < size_t(capture.rows) * keys.size()) return;
    for (size_t k = 0; k < keys.size(); ++k) {
      const long c = column_of(keys[k]);
      if (c < 0) continue;
      for (int r = 0; r < capture.rows; ++r) {
        double& cell = out[base + size_t(r) * cols + size_t(c)];
        const double p = probs[size_t(r) * keys.size() + k];
        cell = (std::isnan(cell) ? 0.0 : cell) + (mean ? p / heads : p);
      }
    }
  };
  if (head >= 0) {
    if (head < heads) add_head(head, false);
    return;
  }
  for (int h = 0; h < heads; ++h) add_head(h, true);
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

ScoreRank score_rank(std::span<const float> scores, int max_points) {
  std::vector<double> sorted(scores.begin(), scores.end());
  std::sort(sorted.begin(), sorted.end(), std::greater<double>());
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
