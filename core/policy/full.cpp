// The full cache: nothing is ever evicted. Memory grows with the stream and,
// past the model's trained context, quality collapses: the baseline the other
// policies are measured against. No parameters, and the default rule: never cut.
#include "core/policy/units.h"

namespace h2o {

const PolicyUnit& full_policy() {
  static const PolicyUnit unit{.name = "full",
                               .title = "Full cache",
                               .short_title = "Full",
                               .color = "#6fa8dc",
                               .description = "nothing is evicted; memory grows with the stream"};
  return unit;
}

}  // namespace h2o
