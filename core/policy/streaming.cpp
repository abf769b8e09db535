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

class StreamingPolicy final : public PolicyUnit {
 public:
  std::string_view name() const override { return "streaming"; }
  std::string_view title() const override { return "StreamingLLM"; }
  std::string_view short_title() const override { return "Streaming"; }
  std::string_view description() const override { return "attention sinks plus a window of recent tokens"; }
  std::string_view color() const override { return "#f28e2b"; }
  std::vector<std::string_view> aliases() const override { return {"streamingllm", "sink"}; }
  std::span<const PolicyParam> params() const override { return kParams; }
  EvictionRule rule(std::span<const int> v) const override {
    EvictionRule r;
    r.sinks = v[0];
    r.recent = v[1];
    r.budget = v[0] + v[1];
    return r;
  }
};

}  // namespace

const PolicyUnit& streaming_policy() {
  static const StreamingPolicy unit;
  return unit;
}

}  // namespace h2o
