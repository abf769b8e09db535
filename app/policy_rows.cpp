#include "app/policy_rows.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/format.h"
#include "core/policy/budget_ratio.h"
#include "core/policy/config_name.h"

namespace h2o::cli {

std::string budget_column(const PolicyConfig& policy) {
  return policy.evicts() ? std::to_string(policy.budget()) : "all";
}

std::string kv_column(const PolicyConfig& policy, const std::string& backend_name) {
  return policy.kv.native() ? backend_name == "cpu" ? "f32" : "native" : policy.kv.label();
}

// The precisions of the rows (kv_precisions: --kv-sweep, else --kv-bits, else the
// backend's own); --kv-group and --kv-residual beside only the backend's own are refused.
std::vector<KvPrecision> row_precisions(const Flags& f, const PolicyRowFlags& ef) {
  const std::vector<KvPrecision> out = kv_precisions(f.kv_bits, ef.kv_sweep, kv_precision(f, "16"));
  if (std::all_of(out.begin(), out.end(), [](const KvPrecision& kv) { return kv.native(); })) refuse_group_without_bits(f);
  return out;
}

// The full cache, then for each precision of --kv-sweep / --kv-bits (the full cache at it
// first): every (budget, policy) of --budgets, every (ratio, policy) of
// --ratios / --budget-ratio, H2O sized by --heavy-ratio / --recent-ratio, and
// each configuration of --configs; ratios are fractions of the `scored`
// tokens. Each budget is split by the policy around the --sinks given.
// --budgets' default list runs only when neither ratios nor configurations
// are asked for. A policy named with its own precision (h2o@2bit) runs at it alone.
std::vector<PolicyRow> policy_rows(const Flags& f, const PolicyRowFlags& ef, int64_t scored) {
  std::vector<PolicyRow> rows = {{PolicyConfig{}, ""}};
  const BudgetRatios ratios = ratios_of(f);
  // Each budget ratio with the flag that gave it (an error names that one).
  std::vector<std::pair<double, const char*>> sweep;
  if (!ef.ratios.empty())
    for (double q : parse_ratio_list(ef.ratios, "--ratios")) sweep.push_back({q, "--ratios"});
  if (ratios.budget) sweep.push_back({*ratios.budget, "--budget-ratio"});
  const bool parts = ratios.heavy || ratios.recent;
  const std::vector<std::string> configs = split_list(ef.configs);
  const bool absolute = f.given("--budgets") || (sweep.empty() && !parts && configs.empty());
  const std::vector<int> budgets =
      absolute ? parse_flag_ints(ef.budgets, "--budgets", "budget", 1, kMaxCacheTokens) : std::vector<int>{};
  std::vector<PolicyEntry> kinds, full_at_own_bits;  // the latter: "full@2bit", a row of its own
  for (const PolicyEntry& entry : policy_list(f.policies, "--policies")) {
    if (PolicyConfig::named(entry.kind).evicts()) kinds.push_back(entry);
    else if (entry.kv) full_at_own_bits.push_back(entry);
  }
  // Every part given (--sinks, --recent, --heavy, --window) holds at every budget; the rest is split.
  PolicySettings settings = policy_parts(f);
  for (const PolicyEntry& kind : kinds)
    for (int b : budgets) {
      PolicySettings s = settings;
      s.budget = b;
      try {
        make_policy(kind.kind, s);
      } catch (const Error& e) {
        fail("--budgets", "budget " + std::to_string(b) + " is too small for " + kind.kind + ": " + e.what());
      }
    }
  const std::vector<KvPrecision> precisions = row_precisions(f, ef);
  for (const PolicyEntry& entry : full_at_own_bits) {
    PolicySettings s = settings;
    s.kv = kv_precision(f, "16");  // --kv-group and --kv-residual; the entry's own bits replace the 16
    rows.push_back({make_policy(entry, s), ""});
  }
  for (const KvPrecision& kv : precisions) {
    settings.kv = kv;
    // A kind's entry at this precision: every kind without one of its own, the rest once.
    std::vector<PolicyEntry> here;
    for (const PolicyEntry& kind : kinds)
      if (!kind.kv || &kv == &precisions.front()) here.push_back(kind);
    if (!kv.native()) {
      PolicyConfig full;
      full.kv = kv;
      full.validate();
      rows.push_back({full, ""});
    }
    for (int b : budgets)
      for (const PolicyEntry& kind : here) {
        PolicySettings s = settings;
        s.budget = b;
        rows.push_back({make_policy(kind, s), ""});
      }
    for (const auto& [q, flag] : sweep)
      for (const PolicyEntry& kind : here) {
        BudgetRatios one;
        one.budget = q;
        PolicyConfig policy = policy_from_ratio(PolicyEntry{kind.kind, {}}, settings, one, scored, "scored tokens", flag, format_ratio(q));
        if (kind.kv) policy.kv.key_bits = kind.kv->key_bits, policy.kv.value_bits = kind.kv->value_bits;
        rows.push_back({policy, format_ratio(q)});
      }
    if (parts) {
      const std::string label = (ratios.heavy ? "heavy " + format_ratio(*ratios.heavy) : std::string()) +
                                (ratios.heavy && ratios.recent ? ", " : "") +
                                (ratios.recent ? "recent " + format_ratio(*ratios.recent) : std::string());
      const char* flag = ratios.heavy ? "--heavy-ratio" : "--recent-ratio";
      rows.push_back({policy_from_ratio(PolicyEntry{"h2o", {}}, settings, ratios, scored, "scored tokens", flag, label), label});
    }
    for (const std::string& name : configs) {
      PolicyConfig policy = policy_from_config_name(name, settings.slack, settings.rolling);
      policy.kv = kv;
      policy.validate();
      if (!policy.evicts() && kv.native()) rows[0].sized_by = name;  // baseline is the full cache the table starts with
      else if (policy.evicts()) rows.push_back({policy, name});
    }
  }
  return rows;
}

}  // namespace h2o::cli
