#include "core/policy/budget_ratio.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/base/error.h"

namespace h2o {

namespace {

void check_ratio(const std::optional<double>& ratio, const std::string& flag) {
  if (ratio && !(*ratio > 0.0 && *ratio <= 1.0))
    fail(flag, "must be a fraction of the input in (0, 1], got " + format_ratio(*ratio));
}

// floor(ratio * n), as a token count.
int64_t tokens_of(double ratio, int64_t n) { return int64_t(std::floor(ratio * double(n))); }

}  // namespace

std::string format_ratio(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", ratio);
  return text;
}

std::vector<double> parse_ratio_list(const std::string& list, const std::string& flag) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    double value = 0;
    size_t used = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size()) fail(flag, "'" + item + "' is not a number (give ratios like 0.1,0.2)");
    check_ratio(value, flag.c_str());
    out.push_back(value);
    start = comma + 1;
  }
  return out;
}

void validate_ratios(const BudgetRatios& r) {
  check_ratio(r.heavy, "--heavy-ratio");
  check_ratio(r.recent, "--recent-ratio");
  check_ratio(r.budget, "--budget-ratio");
  if (r.budget && (r.heavy || r.recent))
    fail("--budget-ratio", "give it or --heavy-ratio / --recent-ratio, not both (each sizes the whole cache)");
}

PolicySettings apply_ratios(PolicySettings s, const BudgetRatios& r, int64_t n, const std::string& budget_flag) {
  validate_ratios(r);
  // The paper's H2O, sized by its two ratios, has no sinks: 0 unless --sinks says otherwise.
  if (r.heavy || r.recent) s.given.try_emplace("sinks", 0);
  const std::string of_n = " of " + std::to_string(n) + " tokens";
  if (r.heavy) s.given["heavy"] = int(std::min<int64_t>(tokens_of(*r.heavy, n), kMaxCacheTokens));
  if (r.recent) s.given["recent"] = int(std::clamp<int64_t>(tokens_of(*r.recent, n), 1, kMaxCacheTokens));
  if (r.budget) {
    const int64_t budget = tokens_of(*r.budget, n);
    if (budget < 1)
      fail(budget_flag, format_ratio(*r.budget) + of_n + " is a budget of 0 tokens (give a larger ratio)");
    s.budget = int(std::min<int64_t>(budget, kMaxCacheTokens));
  }
  return s;
}

}  // namespace h2o
