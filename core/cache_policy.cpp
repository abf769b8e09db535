#include "cache_policy.h"

#include <algorithm>
#include <numeric>

#include "error.h"

namespace h2o {

int PolicyConfig::budget() const {
  switch (kind) {
    case PolicyKind::Full: return -1;
    case PolicyKind::Streaming: return sinks + window;
    case PolicyKind::H2O: return sinks + heavy + recent;
  }
  return -1;
}

std::string PolicyConfig::kind_name() const {
  switch (kind) {
    case PolicyKind::Full: return "full";
    case PolicyKind::Streaming: return "streaming";
    case PolicyKind::H2O: return "h2o";
  }
  return "?";
}

std::string PolicyConfig::describe() const {
  std::string s = kind_name();
  switch (kind) {
    case PolicyKind::Full: break;
    case PolicyKind::Streaming:
      s += "(sinks=" + std::to_string(sinks) + ",window=" + std::to_string(window);
      break;
    case PolicyKind::H2O:
      s += "(sinks=" + std::to_string(sinks) + ",heavy=" + std::to_string(heavy) + ",recent=" + std::to_string(recent);
      break;
  }
  if (kind != PolicyKind::Full) {
    if (slack > 0) s += ",slack=" + std::to_string(slack);
    if (rolling) s += ",rolling";
    s += ")";
  } else if (rolling) {
    s += "(rolling)";
  }
  return s;
}

void PolicyConfig::validate() const {
  auto non_negative = [](int v, const char* flag) {
    if (v < 0) fail(flag, "must be >= 0, got " + std::to_string(v));
  };
  non_negative(slack, "--slack");
  if (kind == PolicyKind::Streaming) {
    non_negative(sinks, "--sinks");
    non_negative(window, "--window");
    if (window == 0) fail("--window", "StreamingLLM needs a window of at least 1 token (the newest)");
  } else if (kind == PolicyKind::H2O) {
    non_negative(sinks, "--sinks");
    non_negative(heavy, "--heavy");
    non_negative(recent, "--recent");
    if (recent == 0) fail("--recent", "H2O needs at least 1 recent token (the newest)");
  }
}

PolicyKind parse_policy_kind(const std::string& name) {
  if (name == "full") return PolicyKind::Full;
  if (name == "streaming" || name == "streamingllm" || name == "sink") return PolicyKind::Streaming;
  if (name == "h2o") return PolicyKind::H2O;
  fail("--policy", "unknown policy '" + name + "' (expected full, streaming or h2o)");
}

std::vector<int> select_kept(const PolicyConfig& policy, std::span<const int32_t> positions,
                             std::span<const float> scores) {
  const int n = int(positions.size());
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  const int budget = policy.budget();
  if (budget < 0 || n <= budget + policy.slack) return all;

  // Sinks are the first stream positions, which are never evicted, so they sit
  // in the first slots; the recent tokens are the last slots.
  int sinks = 0;
  while (sinks < n && positions[sinks] < policy.sinks) ++sinks;
  const int tail = policy.kind == PolicyKind::Streaming ? policy.window : policy.recent;
  const int recent_begin = std::max(sinks, n - tail);

  std::vector<int> kept(all.begin(), all.begin() + sinks);
  if (policy.kind == PolicyKind::H2O && policy.heavy > 0 && recent_begin > sinks) {
    // Highest score among the middle slots; ties go to the more recent token.
    std::vector<int> middle(all.begin() + sinks, all.begin() + recent_begin);
    const int h = std::min<int>(policy.heavy, int(middle.size()));
    std::partial_sort(middle.begin(), middle.begin() + h, middle.end(), [&](int a, int b) {
      if (scores[a] != scores[b]) return scores[a] > scores[b];
      return a > b;
    });
    middle.resize(h);
    std::sort(middle.begin(), middle.end());
    kept.insert(kept.end(), middle.begin(), middle.end());
  }
  for (int i = recent_begin; i < n; ++i) kept.push_back(i);
  return kept;
}

}  // namespace h2o
