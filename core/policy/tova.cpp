// TOVA (Oren et al., 2024, "Transformers are Multi-State RNNs"): per layer
// and KV head, the sinks and the W tokens the step's last query attends to
// most, summed over the query heads of the group. Nothing accumulates, and
// the newest token competes like any other: no recent band (SEMANTICS.md —
// per KV head, not kvpress's per-layer mean).
#include "core/policy/units.h"

namespace h2o {
namespace {

constexpr PolicyParam kParams[] = {
    {"sinks", "attention sinks: the first tokens of the stream, always kept (0: the paper's policy)", 4, 0, ""},
    {"window", "tokens kept by the current query's attention", 60, 1, "TOVA needs a window of at least 1 token"},
};

EvictionRule rule(std::span<const int> v) {
  return {.sinks = v[0], .by_score = v[1], .score = kCurrentScore, .budget = v[0] + v[1]};
}

}  // namespace

const PolicyUnit& tova_policy() {
  static const PolicyUnit unit{.name = "tova", .title = "TOVA", .short_title = "TOVA", .color = "#e15759",
                               .description = "sinks and the tokens the current query attends to most, per layer and KV head",
                               .scored_role = "attended now",
                               .score_meaning = "the newest query's attention to it", .params = kParams, .rule = rule};
  return unit;
}

}  // namespace h2o
