// The list of policy kinds. Adding a policy is one file beside this one and
// one line here.
#include <algorithm>

#include "core/base/error.h"
#include "core/policy/units.h"

namespace h2o {

std::span<const PolicyUnit* const> policy_units() {
  static const PolicyUnit* const kUnits[] = {
      &full_policy(),       // first: the default PolicyConfig
      &streaming_policy(),
      &h2o_policy(),
      &tova_policy(),
  };
  return kUnits;
}

std::string policy_names() {
  const auto units = policy_units();
  std::string text;
  for (size_t i = 0; i < units.size(); ++i)
    text += (i == 0 ? "" : i + 1 == units.size() ? " or " : ", ") + std::string(units[i]->name);
  return text;
}

const PolicyUnit& policy_unit(std::string_view name, const std::string& flag) {
  for (const PolicyUnit* unit : policy_units()) {
    if (name == unit->name || std::find(unit->aliases.begin(), unit->aliases.end(), name) != unit->aliases.end())
      return *unit;
  }
  fail(flag, "unknown policy '" + std::string(name) + "' (expected " + policy_names() + ")");
}

std::vector<PolicyFlag> policy_flags() {
  std::vector<PolicyFlag> flags;
  for (const PolicyUnit* unit : policy_units())
    for (const PolicyParam& p : unit->params) {
      const std::string help = std::string(unit->name) + ": " + p.help + " (default " +
                               std::to_string(p.default_value) + ")";
      auto it = std::find_if(flags.begin(), flags.end(), [&](const PolicyFlag& f) { return f.name == p.name; });
      if (it == flags.end()) flags.push_back({p.name, help});
      else it->help += "; " + help;
    }
  return flags;
}

}  // namespace h2o
