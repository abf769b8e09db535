#pragma once
// The three KV-cache policies of SEMANTICS.md, as pure functions over one
// (layer, KV head) cache: which slots survive a cut. The CPU cache calls these
// directly; the CUDA backend implements the same rule in a kernel and is tested
// against them.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace h2o {

enum class PolicyKind { Full, Streaming, H2O };

struct PolicyConfig {
  PolicyKind kind = PolicyKind::Full;
  int sinks = 4;     // Streaming and H2O: first tokens of the stream, always kept
  int window = 60;   // Streaming: last tokens kept
  int heavy = 28;    // H2O: highest-score tokens kept among the rest
  int recent = 32;   // H2O: last tokens kept
  int slack = 0;     // cut back to the budget only once the cache exceeds budget + slack
  bool rolling = false;  // positions from cache slots instead of stream positions

  // Tokens a KV head may hold between steps (unbounded for Full: -1).
  int budget() const;
  bool evicts() const { return kind != PolicyKind::Full; }
  // "full", "streaming", "h2o"
  std::string kind_name() const;
  // e.g. "h2o(sinks=4,heavy=28,recent=32,rolling)"
  std::string describe() const;
  // Throws Error naming the flag for impossible settings (budget 0, negative sizes).
  void validate() const;
};

PolicyKind parse_policy_kind(const std::string& name);  // throws Error

// The slots of one KV head's cache that survive a cut, ascending. `positions`
// are the stream positions of the slots (ascending), `scores` their
// accumulated attention (H2O only; may be empty otherwise). If the cache holds
// no more than budget + slack tokens, every slot survives.
std::vector<int> select_kept(const PolicyConfig& policy, std::span<const int32_t> positions,
                             std::span<const float> scores);

}  // namespace h2o
