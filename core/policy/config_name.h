#pragma once
// The configuration names of seed 004 (the StreamingLLM + H2O patch on
// Pythia), so its experiment runs as it names it: `baseline` (the full
// cache), `streaming_<sinks>_<capacity>`, `h2o_<sinks>_<recent>_<capacity>`
// and `tova_<sinks>_<capacity>`. The capacity is the budget; the parts not
// named fill it (StreamingLLM's and TOVA's window, H2O's heavy hitters).
#include <string>

#include "core/policy/policy.h"

namespace h2o {

// The policy a configuration name stands for, with `slack` and `rolling`.
// Throws Error naming `flag` and the name when it does not parse or its
// numbers leave no room (sinks + recent must stay below the capacity).
PolicyConfig policy_from_config_name(const std::string& name, int slack, bool rolling,
                                     const std::string& flag = "--configs");

}  // namespace h2o
