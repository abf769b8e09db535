#pragma once
// Budgets as fractions of an input's length, as H2O's reference code sizes its
// cache (`--heavy_ratio 0.1 --recent_ratio 0.1`); ../shared/docs/SEMANTICS.md,
// "Budgets as fractions". A ratio turns into tokens once the input's length N
// is known: the prompt in `generate`, the tokens scored in `eval`.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/policy/policy.h"

namespace h2o {

struct BudgetRatios {
  std::optional<double> heavy;   // --heavy-ratio h: heavy = floor(h N)
  std::optional<double> recent;  // --recent-ratio r: recent = max(1, floor(r N))
  std::optional<double> budget;  // --budget-ratio q: budget = floor(q N), split as --budget is
  bool any() const { return heavy || recent || budget; }
};

// Throws Error naming the flag of a ratio that is not in (0, 1] (NaN included),
// or --budget-ratio beside --heavy-ratio / --recent-ratio (two ways to size one cache).
void validate_ratios(const BudgetRatios& ratios);

// `settings` with the ratios turned into tokens for an input of `n` tokens:
// the parts (given["heavy"], given["recent"]), sinks 0 unless given (the
// paper's default with those two), or the budget (split as --budget is). Throws Error naming the flag when
// a ratio of `n` leaves no token (a budget of 0).
// `budget_flag`: what an error names for the budget ratio (eval's --ratios sweep passes its own).
PolicySettings apply_ratios(PolicySettings settings, const BudgetRatios& ratios, int64_t n,
                            const std::string& budget_flag = "--budget-ratio");

// "0.1,0.2": ratios in (0, 1], checked; throws Error naming `flag`.
std::vector<double> parse_ratio_list(const std::string& list, const std::string& flag);

// "0.1" / "0.125": a ratio as the tables print it (shortest form that reads back).
std::string format_ratio(double ratio);

}  // namespace h2o
