#pragma once
// The small run the studio tests share: the synthetic stories260K model, a
// budget of 24 with 2 sinks, greedy turns of 12 tokens, layer 1 watched.
#include "core/studio/studio_setup.h"

namespace h2o::test {

inline StudioConfig small_studio_config() {
  StudioConfig c;
  c.model = "synthetic:stories260K";
  c.budget = 24;
  c.params["sinks"] = 2;
  c.max_new_tokens = 12;
  c.greedy = true;
  c.capture_layer = 1;
  return c;
}

}  // namespace h2o::test
