#pragma once
// A KV-cache policy (../shared/docs/SEMANTICS.md): which tokens each
// (layer, KV head) keeps between steps.
//
// A policy kind is one small unit (full.cpp, streaming.cpp, h2o.cpp,
// tova.cpp, each listed by one line in registry.cpp): its name, title,
// colour, parameters, how it splits a budget, and the plain EvictionRule it
// exports. Everything else — the kept set (kept_set.h), token roles
// (fate.h), descriptions, validation, JSON — is written once over that rule,
// so no code outside this folder asks which policy it is serving, and a
// device kernel cuts by the rule's numbers alone.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json_fwd.hpp>

#include "core/policy/kv_precision.h"
#include "core/policy/score_rule.h"

namespace h2o {

// What a backend cuts by, for any policy: once a (layer, KV head) holds more
// than budget + slack tokens, keep the slots whose stream position is below
// `sinks`, the last `recent` slots, and the `by_score` highest-scored of the
// rest (ties go to the more recent): `budget` tokens. budget < 0: never cut.
struct EvictionRule {
  int sinks = 0;
  int recent = 0;
  int by_score = 0;
  ScoreRule score = {};  // what the by_score tokens are ranked by (score_rule.h)
  int budget = -1;
  int slack = 0;
  bool rolling = false;  // RoPE positions from cache slots instead of stream positions
  bool evicts() const { return budget >= 0; }
  // Whether a head holding `keys` tokens after a step's attention is cut.
  bool cut_due(int keys) const { return evicts() && keys > budget + slack; }
  // Whether it keeps heavy hitters: tokens ranked by attention summed since they entered (H2O's).
  bool keeps_heavy_hitters() const { return by_score > 0 && score.accumulates(); }
  bool operator==(const EvictionRule&) const = default;
};

// The most tokens a (layer, KV head) may be asked to hold: budget + slack, and
// each part, at most this. The model's KV size and the machine's memory bound
// a budget further (Engine); this bound keeps every sum inside an int.
constexpr int kMaxCacheTokens = 1 << 24;

// One parameter of a policy kind; flags and settings call it "--" + name.
struct PolicyParam {
  const char* name;           // "window"
  const char* help;           // for --help
  int default_value;
  int min_value;              // 0, or 1 for a part that must hold the newest token
  const char* below_minimum;  // why, when min_value is 1 and 0 was given
};

// A policy kind: who it is, what it takes, and its rule. One per file,
// written as one constant of this type; registry.cpp lists them.
struct PolicyUnit {
  std::string_view name;         // "h2o": flags, logs, recordings
  std::string_view title;        // "H2O": pane titles, legends
  std::string_view short_title;  // "H2O": crowded legends and menus
  std::string_view color;        // "#59c16f": panes, curves, legends
  std::string_view description;  // one line: help texts and tooltips
  // What the app calls a token this kind keeps for its score (Fate::Heavy).
  std::string_view scored_role = "kept for its score";
  // What that score is, in words a class can follow ("its attention summed over every query since it entered").
  std::string_view score_meaning = "its score";
  std::span<const PolicyParam> params = {};
  std::span<const std::string_view> aliases = {};
  // The rule of these values (params order); PolicyConfig adds slack and rolling.
  EvictionRule (*rule)(std::span<const int> values) = nullptr;
  // Fills the values not `given` so that sinks and the other parts add up to
  // `budget` (both in params order; sinks count as given). Null: the parts
  // not given share what is left evenly, the odd token to the last (H2O:
  // heavy and recent half each, the paper's split). Throws Error naming the
  // flag when the given parts leave no valid split.
  void (*split_budget)(const PolicyUnit& unit, int budget, std::span<int> values, const std::vector<bool>& given) = nullptr;
};

// The default split (see PolicyUnit::split_budget).
void split_budget_evenly(const PolicyUnit& unit, int budget, std::span<int> values, const std::vector<bool>& given);

// A chosen policy: a kind and its values. A small copyable value; the default is the full cache.
class PolicyConfig {
 public:
  PolicyConfig();
  // The kind named `name` (or an alias) with its default values; throws
  // Error("--policy: unknown policy ...") naming every kind there is.
  static PolicyConfig named(std::string_view name);
  // A kind outside the registry (a test's own) with its default values; `unit` must outlive the config.
  static PolicyConfig of(const PolicyUnit& unit) { return PolicyConfig(unit); }

  const PolicyUnit& unit() const { return *unit_; }
  std::string_view name() const { return unit_->name; }
  bool has(std::string_view param) const { return index_of(param) >= 0; }
  int get(std::string_view param) const;                 // throws Error if the kind has no such parameter
  PolicyConfig& set(std::string_view param, int value);  // likewise
  std::span<const int> values() const { return values_; }

  int slack = 0;         // let the cache grow to budget + slack before one cut back to budget
  bool rolling = false;  // positions from cache slots
  KvPrecision kv;        // bits a cached key and value keep (default: the backend's own)

  EvictionRule rule() const;
  int budget() const { return rule().budget; }
  bool evicts() const { return rule().evicts(); }
  // "h2o(sinks=4,heavy=28,recent=32,rolling)", "full",
  // "h2o(sinks=4,heavy=28,recent=32,kv=2bit,kv_group=8,kv_residual=8)"; without
  // `kv_shape`, a quantized policy's G and R are left out (a pane's header has room for the bits only).
  std::string describe(bool kv_shape = true) const;
  // Throws Error naming the flag of the first impossible value.
  void validate() const;
  // The KV shape for a model's head (KvPrecision::shaped_for with this policy's budget and sinks).
  void shape_kv(int head_dim);
  bool operator==(const PolicyConfig& other) const;

 private:
  explicit PolicyConfig(const PolicyUnit& unit);
  int index_of(std::string_view param) const;  // -1 if none
  const PolicyUnit* unit_;
  std::vector<int> values_;
};

// How front ends ask for a policy: the CLI from its flags, the app from its
// settings, eval once per budget, the benchmark from its options.
struct PolicySettings {
  std::optional<int> budget;         // tokens per KV head; the kind splits what is not given
  std::map<std::string, int> given;  // explicit values by parameter name ("sinks", "window", ...)
  int slack = 0;
  bool rolling = false;
  KvPrecision kv;
};
// The kind `name` with `settings` applied, validated. Throws Error naming the flag.
PolicyConfig make_policy(std::string_view name, const PolicySettings& settings);

// One entry of a policy list: a kind ("h2o"), or a kind at a KV precision of
// its own ("h2o@2bit", "full@k4v2"), so one list may show a policy twice.
struct PolicyEntry {
  std::string kind;               // the kind's own name (aliases resolved)
  std::optional<KvPrecision> kv;  // bits after '@' (group and residual from the settings)
};
// Throws Error naming `flag` for an unknown kind or precision.
PolicyEntry parse_policy_entry(std::string_view entry, const std::string& flag);
// The entry's kind with `settings`, its precision (if any) replacing settings.kv's bits.
PolicyConfig make_policy(const PolicyEntry& entry, PolicySettings settings);

// Every kind, in the order menus and flag lists show them.
std::span<const PolicyUnit* const> policy_units();
// The kind named `name` or one of its aliases; throws Error("<flag>: unknown policy ...").
const PolicyUnit& policy_unit(std::string_view name, const std::string& flag = "--policy");
// "full, streaming, h2o or tova"
std::string policy_names();
// Every parameter name of every kind, once, in registry order, with the help
// of each kind that takes it ("streaming: ...; tova: ..."): for registering flags.
struct PolicyFlag {
  std::string name, help;
};
std::vector<PolicyFlag> policy_flags();

// The one JSON layout of a policy (manifests, recordings):
// {"policy", "name", "rolling", <parameters>..., and "budget", "slack" when it evicts}.
nlohmann::json policy_json(const PolicyConfig& policy);
// Reads it back (also the "kind" key of version-1 recordings). Throws Error.
PolicyConfig policy_from_json(const nlohmann::json& j);

}  // namespace h2o
