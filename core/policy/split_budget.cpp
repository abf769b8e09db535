// The default budget split: the parts a user did not give share what the
// sinks and the given parts leave of the budget.
#include "core/policy/policy.h"

#include "core/base/error.h"

namespace h2o {

namespace {

std::string parts_text(std::span<const PolicyParam> params, std::span<const int> values, const std::vector<bool>& given) {
  std::string text;
  for (size_t i = 0; i < params.size(); ++i)
    if (given[i] || std::string_view(params[i].name) == "sinks")
      text += (text.empty() ? "" : ", ") + std::string(params[i].name) + "=" + std::to_string(values[i]);
  return text;
}

}  // namespace

void split_budget_evenly(const PolicyUnit& unit, int budget, std::span<int> values, const std::vector<bool>& given) {
  const auto p = unit.params;
  int left = budget;
  std::vector<size_t> open;  // parts to fill
  for (size_t i = 0; i < p.size(); ++i) {
    if (given[i] || std::string_view(p[i].name) == "sinks") left -= values[i];
    else open.push_back(i);
  }
  const std::string budget_text = "the budget of " + std::to_string(budget);
  if (open.empty()) {
    if (left != 0)
      fail("--budget", parts_text(p, values, given) + " add up to " + std::to_string(budget - left) + ", not to " +
                           budget_text);
    return;
  }
  if (left < 0) fail("--budget", parts_text(p, values, given) + " exceed " + budget_text);
  const int share = left / int(open.size());
  for (size_t k = 0; k < open.size(); ++k) {
    const size_t i = open[k];
    values[i] = k + 1 < open.size() ? share : left - share * int(open.size() - 1);
    if (values[i] < p[i].min_value)
      fail(std::string("--") + p[i].name, "gets " + std::to_string(values[i]) + " of " + budget_text + " beside " +
                                              parts_text(p, values, given) + ": " + p[i].below_minimum);
  }
}

}  // namespace h2o
