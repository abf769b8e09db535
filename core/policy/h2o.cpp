// H2O (Zhang et al., 2023): per layer and KV head, the sinks, the recent
// tokens, and the heavy hitters — the tokens with the highest attention
// accumulated over every query since they entered (SEMANTICS.md).
#include "core/policy/units.h"

namespace h2o {
namespace {

constexpr PolicyParam kParams[] = {
    {"sinks", "attention sinks: the first tokens of the stream, always kept (0: the paper's policy)", 4, 0, ""},
    {"heavy", "heavy hitters kept for their accumulated attention", 28, 0, ""},
    {"recent", "the last tokens kept", 32, 1, "H2O needs at least 1 recent token (the newest)"},
};

class H2OPolicy final : public PolicyUnit {
 public:
  std::string_view name() const override { return "h2o"; }
  std::string_view title() const override { return "H2O"; }
  std::string_view description() const override {
    return "sinks, recent tokens and the heavy hitters of accumulated attention, per layer and KV head";
  }
  std::string_view color() const override { return "#59c16f"; }
  std::string_view scored_role() const override { return "heavy hitter"; }
  std::span<const PolicyParam> params() const override { return kParams; }
  EvictionRule rule(std::span<const int> v) const override {
    EvictionRule r;
    r.sinks = v[0];
    r.by_score = v[1];
    r.recent = v[2];
    r.score = ScoreKind::Accumulated;
    r.budget = v[0] + v[1] + v[2];
    return r;
  }
};

}  // namespace

const PolicyUnit& h2o_policy() {
  static const H2OPolicy unit;
  return unit;
}

}  // namespace h2o
