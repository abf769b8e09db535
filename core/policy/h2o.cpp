// H2O (Zhang et al., 2023): per layer and KV head, the sinks, the recent
// tokens, and the heavy hitters — the tokens with the highest attention
// accumulated over every query since they entered (SEMANTICS.md). Its budget
// splits evenly between heavy hitters and recent tokens, as in the paper.
#include "core/policy/units.h"

namespace h2o {
namespace {

constexpr PolicyParam kParams[] = {
    {"sinks", "attention sinks: the first tokens of the stream, always kept (0: the paper's policy)", 4, 0, ""},
    {"heavy", "heavy hitters kept for their accumulated attention", 28, 0, ""},
    {"recent", "the last tokens kept", 32, 1, "H2O needs at least 1 recent token (the newest)"},
};

EvictionRule rule(std::span<const int> v) {
  return {.sinks = v[0], .recent = v[2], .by_score = v[1], .score = kAccumulatedScore, .budget = v[0] + v[1] + v[2]};
}

}  // namespace

const PolicyUnit& h2o_policy() {
  static const PolicyUnit unit{
      .name = "h2o", .title = "H2O", .short_title = "H2O", .color = "#59c16f",
      .description = "sinks, recent tokens and the heavy hitters of accumulated attention, per layer and KV head",
      .scored_role = "heavy hitter", .score_meaning = "its attention summed over every query since it entered",
      .params = kParams, .rule = rule};
  return unit;
}

}  // namespace h2o
