#include "core/runtime/step_record.h"

#include "core/base/error.h"

namespace h2o {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Prefill: return "prefill";
    case Phase::Decode: return "decode";
    case Phase::Forced: return "forced";
    case Phase::Done: return "done";
  }
  return "?";
}

Phase phase_from_name(const std::string& name) {
  for (Phase p : {Phase::Prefill, Phase::Decode, Phase::Forced, Phase::Done})
    if (name == phase_name(p)) return p;
  throw Error("unknown phase '" + name + "'");
}

}  // namespace h2o
