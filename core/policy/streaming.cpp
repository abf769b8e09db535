// StreamingLLM (Xiao et al., 2023): attention sinks — the first tokens of the
// stream — and a window of the most recent tokens. The same set in every
// layer and head; no scores.
#include "core/policy/units.h"

namespace h2o {
namespace {

constexpr PolicyParam kParams[] = {
    {"sinks", "attention sinks: the first tokens of the stream, always kept", 4, 0, ""},
    {"window", "the last tokens kept", 60, 1, "StreamingLLM needs a window of at least 1 token (the newest)"},
};
constexpr std::string_view kAliases[] = {"streamingllm", "sink"};

EvictionRule rule(std::span<const int> v) {
  return {.sinks = v[0], .recent = v[1], .budget = v[0] + v[1]};
}

}  // namespace

const PolicyUnit& streaming_policy() {
  static const PolicyUnit unit{.name = "streaming", .title = "StreamingLLM", .short_title = "Streaming",
                               .color = "#f28e2b", .description = "attention sinks plus a window of recent tokens",
                               .params = kParams, .aliases = kAliases, .rule = rule};
  return unit;
}

}  // namespace h2o
