#pragma once
// The policy kinds, one file each; registry.cpp lists them. Only this folder includes this.
#include "core/policy/policy.h"

namespace h2o {

const PolicyUnit& full_policy();       // full.cpp
const PolicyUnit& streaming_policy();  // streaming.cpp
const PolicyUnit& h2o_policy();        // h2o.cpp
const PolicyUnit& tova_policy();       // tova.cpp

}  // namespace h2o
