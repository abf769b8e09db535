// TOVA (Oren et al., 2024, "Transformers are Multi-State RNNs"): per layer
// and KV head, the sinks and the W tokens the step's last query attends to
// most, summed over the query heads of the group. Nothing accumulates, and
// the newest token competes like any other (SEMANTICS.md: per KV head, not
// kvpress's per-layer mean).
#include "core/policy/units.h"

namespace h2o {
namespace {

constexpr PolicyParam kParams[] = {
    {"sinks", "attention sinks: the first tokens of the stream, always kept (0: the paper's policy)", 4, 0, ""},
    {"window", "tokens kept by the current query's attention", 60, 1, "TOVA needs a window of at least 1 token"},
};

class TovaPolicy final : public PolicyUnit {
 public:
  std::string_view name() const override { return "tova"; }
  std::string_view title() const override { return "TOVA"; }
  std::string_view description() const override {
    return "sinks and the tokens the current query attends to most, per layer and KV head";
  }
  std::string_view color() const override { return "#e15759"; }
  std::string_view scored_role() const override { return "attended now"; }
  std::span<const PolicyParam> params() const override { return kParams; }
  EvictionRule rule(std::span<const int> v) const override {
    EvictionRule r;
    r.sinks = v[0];
    r.by_score = v[1];
    r.score = ScoreKind::Current;
    r.budget = v[0] + v[1];
    return r;
  }
};

}  // namespace

const PolicyUnit& tova_policy() {
  static const TovaPolicy unit;
  return unit;
}

}  // namespace h2o
