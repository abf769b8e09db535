// The full cache: nothing is ever evicted. Memory grows with the stream and,
// past the model's trained context, quality collapses: the baseline the other
// policies are measured against.
#include "core/policy/units.h"

namespace h2o {
namespace {

class FullPolicy final : public PolicyUnit {
 public:
  std::string_view name() const override { return "full"; }
  std::string_view title() const override { return "Full cache"; }
  std::string_view short_title() const override { return "Full"; }
  std::string_view description() const override { return "nothing is evicted; memory grows with the stream"; }
  std::string_view color() const override { return "#6fa8dc"; }
  std::span<const PolicyParam> params() const override { return {}; }
  EvictionRule rule(std::span<const int>) const override { return {}; }
};

}  // namespace

const PolicyUnit& full_policy() {
  static const FullPolicy unit;
  return unit;
}

}  // namespace h2o
