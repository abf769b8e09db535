#include "core/policy/fate.h"

#include <algorithm>

namespace h2o {

const char* fate_name(Fate fate) {
  switch (fate) {
    case Fate::Unborn: return "unborn";
    case Fate::Evicted: return "evicted";
    case Fate::Cached: return "cached";
    case Fate::Heavy: return "heavy hitter";
    case Fate::Recent: return "recent";
    case Fate::Sink: return "sink";
  }
  return "?";
}

std::string fate_label(const PolicyConfig& policy, Fate fate) {
  return fate == Fate::Heavy ? std::string(policy.unit().scored_role) : fate_name(fate);
}

std::string fate_reason(const PolicyConfig& policy, Fate fate) {
  const EvictionRule rule = policy.rule();
  const std::string meaning(policy.unit().score_meaning), recent = std::to_string(rule.recent);
  const std::string scored = std::to_string(rule.by_score);
  // TOVA has no recent band: the newest token competes on its score like the rest.
  const std::string older = rule.recent > 0 ? " of the tokens older than its newest " + recent : " of the tokens past its sinks";
  switch (fate) {
    case Fate::Unborn: return "not in its stream yet";
    case Fate::Sink: return "held: one of the first " + std::to_string(rule.sinks) + " tokens, which it always keeps";
    case Fate::Recent: return "held: among the newest " + recent + " tokens, which it always keeps";
    case Fate::Heavy:
      return "held as " + std::string(policy.unit().scored_role) + ": " + meaning + " is among the " + scored +
             " highest" + older;
    case Fate::Cached:
      return rule.evicts() ? "held until the next cut (it lets the cache grow " + std::to_string(rule.slack) +
                                 " tokens past its budget, then cuts back)"
                           : "held: the full cache keeps every token";
    case Fate::Evicted:
      if (rule.by_score == 0) return "evicted: it left the newest " + recent + " tokens (the window slid past it)";
      return "evicted: " + (rule.recent > 0 ? "it had left the newest " + recent + " tokens and " : std::string()) +
             meaning + " was not among the " + scored + " highest";
  }
  return "";
}

Fate fate_of(const EvictionRule& rule, int64_t position, bool cached, int64_t stream_length) {
  if (position >= stream_length) return Fate::Unborn;
  if (!cached) return Fate::Evicted;
  if (!rule.evicts()) return Fate::Cached;
  if (position < rule.sinks) return Fate::Sink;
  if (position >= stream_length - rule.recent) return Fate::Recent;
  // Held beyond sinks and recent: for its score, or (no scores) the slack's backlog.
  return rule.by_score > 0 ? Fate::Heavy : Fate::Cached;
}

std::vector<Fate> token_fates(const PolicyConfig& policy, std::span<const int32_t> cached, int64_t stream_length) {
  const EvictionRule rule = policy.rule();
  std::vector<uint8_t> held(size_t(std::max<int64_t>(stream_length, 0)), 0);
  for (int32_t p : cached)
    if (p >= 0 && p < stream_length) held[size_t(p)] = 1;
  std::vector<Fate> out(held.size());
  for (size_t p = 0; p < held.size(); ++p) out[p] = fate_of(rule, int64_t(p), held[p] != 0, stream_length);
  return out;
}

}  // namespace h2o
