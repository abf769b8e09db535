// PolicyConfig and make_policy: values, validation and descriptions written
// once for every policy kind, over the kind's parameter list.
#include "core/policy/policy.h"

#include <algorithm>

#include "core/base/error.h"

namespace h2o {

PolicyConfig::PolicyConfig() : PolicyConfig(*policy_units().front()) {}

PolicyConfig::PolicyConfig(const PolicyUnit& unit) : unit_(&unit) {
  for (const PolicyParam& p : unit.params) values_.push_back(p.default_value);
}

PolicyConfig PolicyConfig::named(std::string_view name) { return PolicyConfig(policy_unit(name)); }

int PolicyConfig::index_of(std::string_view param) const {
  const auto params = unit_->params;
  for (size_t i = 0; i < params.size(); ++i)
    if (param == params[i].name) return int(i);
  return -1;
}

int PolicyConfig::get(std::string_view param) const {
  const int i = index_of(param);
  if (i < 0) throw Error(std::string(name()) + " has no parameter '" + std::string(param) + "'");
  return values_[size_t(i)];
}

PolicyConfig& PolicyConfig::set(std::string_view param, int value) {
  const int i = index_of(param);
  if (i < 0) throw Error(std::string(name()) + " has no parameter '" + std::string(param) + "'");
  values_[size_t(i)] = value;
  return *this;
}

EvictionRule PolicyConfig::rule() const {
  EvictionRule r = unit_->rule ? unit_->rule(values_) : EvictionRule{};
  r.slack = slack;
  r.rolling = rolling;
  return r;
}

std::string PolicyConfig::describe(bool kv_shape) const {
  std::string inside;
  const auto params = unit_->params;
  // Appended piece by piece: GCC 12 warns -Wrestrict (falsely) on const char* + std::string&&.
  for (size_t i = 0; i < params.size(); ++i) {
    if (!inside.empty()) inside += ',';
    inside += params[i].name;
    inside += '=';
    inside += std::to_string(values_[i]);
  }
  if (evicts() && slack > 0) inside += ",slack=" + std::to_string(slack);
  if (rolling) inside += inside.empty() ? "rolling" : ",rolling";
  if (!kv.native()) {
    inside += (inside.empty() ? "kv=" : ",kv=") + kv.label();
    // Once shaped (or given), a quantized policy says its G and R; before, they depend on the model.
    if (kv_shape && kv.quantized() && kv.shape_given)
      inside += ",kv_group=" + std::to_string(kv.group) + ",kv_residual=" + std::to_string(kv.residual);
  }
  std::string out(name());
  return inside.empty() ? out : out + "(" + inside + ")";
}

void PolicyConfig::validate() const {
  const std::string most = " tokens a KV head may hold (" + std::to_string(kMaxCacheTokens) + ")";
  if (slack < 0) fail("--slack", "must be >= 0, got " + std::to_string(slack));
  if (slack > kMaxCacheTokens) fail("--slack", std::to_string(slack) + " is more than the" + most);
  const auto params = unit_->params;
  int64_t total = slack;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string flag = std::string("--") + params[i].name;
    const int v = values_[i];
    if (v < 0) fail(flag, "must be >= 0, got " + std::to_string(v));
    if (v > kMaxCacheTokens) fail(flag, std::to_string(v) + " is more than the" + most);
    if (v < params[i].min_value) fail(flag, params[i].below_minimum);
    total += v;
  }
  if (total > kMaxCacheTokens)
    fail(params.empty() ? "--slack" : "--budget",
         "the parts and the slack add up to " + std::to_string(total) + ", more than the" + most);
  kv.validate(rolling);
}

void PolicyConfig::shape_kv(int head_dim) {
  const EvictionRule r = rule();
  kv = kv.shaped_for(head_dim, r.evicts() ? r.budget : 0, r.evicts() ? r.sinks : 0);
}

bool PolicyConfig::operator==(const PolicyConfig& other) const {
  return unit_ == other.unit_ && values_ == other.values_ && slack == other.slack && rolling == other.rolling &&
         kv == other.kv;
}

PolicyConfig make_policy(std::string_view name, const PolicySettings& settings) {
  PolicyConfig policy = PolicyConfig::named(name);
  const auto params = policy.unit().params;
  std::vector<bool> given(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i)
    if (const auto it = settings.given.find(params[i].name); it != settings.given.end()) {
      policy.set(params[i].name, it->second);
      given[i] = true;
    }
  if (settings.budget && !params.empty()) {
    const int budget = *settings.budget;
    if (budget < 1) fail("--budget", "must be at least 1 token, got " + std::to_string(budget));
    if (budget > kMaxCacheTokens)
      fail("--budget", std::to_string(budget) + " is more than the tokens a KV head may hold (" +
                           std::to_string(kMaxCacheTokens) + ")");
    if (policy.has("sinks")) {
      const int sinks = policy.get("sinks");
      if (sinks < 0) fail("--sinks", "must be >= 0, got " + std::to_string(sinks));
      if (sinks >= budget)
        fail("--sinks", std::to_string(sinks) + " sinks leave no room in a budget of " + std::to_string(budget) +
                            " (the newest token must fit)");
    }
    std::vector<int> values(policy.values().begin(), policy.values().end());
    const auto split = policy.unit().split_budget ? policy.unit().split_budget : split_budget_evenly;
    split(policy.unit(), budget, values, given);
    for (size_t i = 0; i < params.size(); ++i) policy.set(params[i].name, values[i]);
  }
  policy.slack = settings.slack;
  policy.rolling = settings.rolling;
  policy.kv = settings.kv;
  policy.validate();
  return policy;
}

PolicyEntry parse_policy_entry(std::string_view entry, const std::string& flag) {
  const size_t at = entry.find('@');
  PolicyEntry out{std::string(policy_unit(entry.substr(0, at), flag).name), std::nullopt};
  if (at != std::string_view::npos) out.kv = parse_kv_label(entry.substr(at + 1), flag);
  return out;
}

PolicyConfig make_policy(const PolicyEntry& entry, PolicySettings settings) {
  if (entry.kv) {
    settings.kv.key_bits = entry.kv->key_bits;
    settings.kv.value_bits = entry.kv->value_bits;
  }
  return make_policy(entry.kind, settings);
}

}  // namespace h2o
