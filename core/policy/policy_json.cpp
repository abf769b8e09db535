// The one JSON layout of a policy, used by run manifests and recordings.
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/policy/policy.h"

namespace h2o {

nlohmann::json policy_json(const PolicyConfig& p) {
  nlohmann::json j = {{"policy", p.name()}, {"name", p.describe()}, {"rolling", p.rolling}};
  const auto params = p.unit().params;
  for (size_t i = 0; i < params.size(); ++i) j[params[i].name] = p.values()[i];
  if (p.evicts()) j.update({{"budget", p.budget()}, {"slack", p.slack}});
  // Only where asked for, so a native-precision policy reads as it always did.
  if (!p.kv.native()) {
    j["kv_bits"] = {p.kv.key_bits, p.kv.value_bits};
    if (p.kv.shape_given) j.update({{"kv_group", p.kv.group}, {"kv_residual", p.kv.residual}});
  }
  return j;
}

PolicyConfig policy_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("policy: expected an object");
  // Version-1 recordings named the kind "kind" and listed every parameter of every kind.
  const char* key = j.contains("policy") ? "policy" : "kind";
  if (!j.contains(key) || !j[key].is_string()) throw Error("policy: missing \"policy\" name");
  PolicyConfig p = PolicyConfig::named(j[key].get<std::string>());
  const auto number = [&](const char* name) { return "policy: \"" + std::string(name) + "\""; };
  for (const PolicyParam& param : p.unit().params)
    if (j.contains(param.name)) p.set(param.name, json_int(j[param.name], number(param.name)));
  p.slack = json_int_or(j, "slack", 0, number("slack"));
  p.rolling = j.value("rolling", false);
  if (j.contains("kv_bits")) {
    const nlohmann::json& bits = j["kv_bits"];
    if (!bits.is_array() || bits.size() != 2) throw Error("policy: \"kv_bits\" must list the key's and the value's bits");
    p.kv = {json_int(bits[0], number("kv_bits")), json_int(bits[1], number("kv_bits")),
            json_int_or(j, "kv_group", KvPrecision{}.group, number("kv_group")),
            json_int_or(j, "kv_residual", KvPrecision{}.residual, number("kv_residual")),
            j.contains("kv_group") || j.contains("kv_residual")};
  }
  p.validate();
  return p;
}

}  // namespace h2o
