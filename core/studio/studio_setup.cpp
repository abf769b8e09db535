#include "core/studio/studio_setup.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <map>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/base/system_limits.h"
#include "core/base/text_file.h"

namespace h2o {

nlohmann::json studio_config_json(const StudioConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for_each_studio_field(c, [&](const char* key, const auto& field) { j[key] = field; });
  return j;
}

namespace {

// One setting's value as the controls say it: "default", "auto" and "none"
// for the values that mean them, lists joined, switches on or off.
std::string shown_setting(const std::string& key, const nlohmann::json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>().empty() ? "default" : v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_array()) {
    std::string out;
    for (const auto& item : v) {
      if (!out.empty()) out += ',';
      out += shown_setting(key, item);
    }
    return out;
  }
  if (v.is_number_integer()) {
    const int64_t n = v.get<int64_t>();
    if (n == 0 && (is_automatic_param(key) || key == "threads")) return "auto";
    if (n == 0 && key == "kv_limit_mib") return "none";
    if (n < 0 && key == "slack") return "auto";
  }
  return v.dump();
}

}  // namespace

std::string studio_config_changes(const StudioConfig& from, const StudioConfig& to) {
  const nlohmann::json a = studio_config_json(from), b = studio_config_json(to);
  std::string out;
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (it.key() == "layer") continue;  // the view: applied live
    const nlohmann::json was = a.value(it.key(), nlohmann::json());
    if (was == it.value()) continue;
    // The controls' words for the keys that differ from them.
    static const std::map<std::string, std::string> kLabels = {
        {"backend", "device"}, {"kv_limit_mib", "KV limit MiB"}, {"forced", "teacher-forced"}, {"kv_bits", "KV bits"}};
    std::string name = kLabels.count(it.key()) ? kLabels.at(it.key()) : it.key();
    std::replace(name.begin(), name.end(), '_', ' ');
    if (!out.empty()) out += ", ";
    out += name + " " + shown_setting(it.key(), was) + " → " + shown_setting(it.key(), it.value());
  }
  return out;
}

StudioConfig studio_config_from_json(const nlohmann::json& j) {
  StudioConfig c;
  if (!j.is_object()) return c;
  for_each_studio_field(c, [&](const char* key, auto& field) {
    if (!j.contains(key)) return;
    using T = std::decay_t<decltype(field)>;
    // A number that does not fit the field keeps the default (nlohmann's
    // conversion of 1e110 to an int, or to a float, is undefined behaviour).
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      int64_t v = 0;
      if (json_whole(j.at(key), v) && std::in_range<T>(v)) field = T(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (j.at(key).is_number() && std::abs(j.at(key).get<double>()) <= double(std::numeric_limits<T>::max()))
        field = T(j.at(key).get<double>());
    } else {
      try {
        j.at(key).get_to(field);
      } catch (const nlohmann::json::exception&) {
        // A value of the wrong type keeps the default.
      }
    }
  });
  return c;
}

StudioConfig studio_config_from_policies(StudioConfig base, const std::vector<PolicyConfig>& policies, bool forced) {
  StudioConfig c = std::move(base);
  c.forced = forced;
  c.kv_bits.clear();  // each pane names its own
  c.policies.clear();
  for (const PolicyConfig& p : policies) {
    std::string entry(p.name());
    if (!p.kv.native()) entry.append("@").append(p.kv.label());
    c.policies.push_back(std::move(entry));
  }
  const auto evicting = std::find_if(policies.begin(), policies.end(), [](const PolicyConfig& p) { return p.evicts(); });
  if (evicting == policies.end()) return c;
  c.budget = evicting->budget();
  c.slack = evicting->slack;
  c.rolling = evicting->rolling;
  for (auto& [name, value] : c.params)
    for (const PolicyConfig& p : policies)
      if (p.has(name)) {
        value = p.get(name);
        break;
      }
  return c;
}

std::vector<PolicyConfig> studio_policies(const StudioConfig& c) {
  if (int(c.policies.size()) < kMinStudioPolicies || int(c.policies.size()) > kMaxStudioPolicies)
    fail("--policies", "choose " + std::to_string(kMinStudioPolicies) + " to " + std::to_string(kMaxStudioPolicies) +
                         " policies for side by side, got " + std::to_string(c.policies.size()));
  PolicySettings settings;
  settings.budget = c.budget;
  // The parts left at 0 (auto) share what the given ones leave of the budget.
  for (const auto& [name, value] : c.params)
    if (value > 0 || !is_automatic_param(name)) settings.given[name] = value;
  settings.slack = c.slack >= 0 ? c.slack : default_slack(c.backend);  // -1: the backend's default
  settings.rolling = c.rolling;
  if (!c.kv_bits.empty()) settings.kv = parse_kv_bits(c.kv_bits, "--kv-bits");
  if (c.kv_group > 0) settings.kv.group = c.kv_group;
  if (c.kv_residual > 0) settings.kv.residual = c.kv_residual;
  settings.kv.shape_given = c.kv_group > 0 || c.kv_residual > 0;
  std::vector<PolicyConfig> out;
  for (const std::string& name : c.policies) out.push_back(make_policy(parse_policy_entry(name, "--policies"), settings));
  return out;
}

EngineOptions studio_engine_options(const StudioConfig& c) {
  EngineOptions o;
  o.policies = studio_policies(c);
  o.sampling.temperature = c.greedy ? 0.0f : c.temperature;
  o.sampling.seed = c.seed;
  o.max_new_tokens = c.max_new_tokens;
  o.loop_prompts = true;  // one endless conversation
  o.batched = batched_by_default(c.backend);
  o.validate();
  return o;
}

StudioInputs load_studio_inputs(const StudioConfig& c, const LoadProgress& progress) {
  StudioInputs in;
  in.model_path = c.model;
  in.tokenizer_path = c.tokenizer;
  in.model = load_model(c.model, progress);
  in.tokenizer = tokenizer_for(*in.model, c.tokenizer);
  in.tokenizer_warning = tokenizer_mismatch(*in.model, *in.tokenizer, c.tokenizer);
  if (in.tokenizer_warning.empty()) in.tokenizer_warning = no_tokenizer_warning(*in.model, c.tokenizer);
  return in;
}

BackendOptions studio_backend_options(const StudioConfig& c) {
  BackendOptions b;
  b.kind = c.backend;
  b.threads = studio_threads(c.threads, unsigned(hardware_threads()));
  b.kv_limit_bytes = int64_t(c.kv_limit_mib) << 20;
  return b;
}

int studio_threads(int asked, unsigned cores) {
  if (asked > 0) return asked;
  return cores > 1 ? int(cores) - 1 : 1;
}

std::unique_ptr<Engine> make_studio_engine(const StudioConfig& c, const StudioInputs& in,
                                           std::unique_ptr<Backend> backend) {
  auto engine = std::make_unique<Engine>(in.model, std::move(backend), in.tokenizer, studio_engine_options(c));
  if (c.forced) {
    std::string text;
    if (c.forced_text.empty()) {
      // No file: the built-in prompts, one after another, are text enough to score.
      for (const Turn& t : builtin_prompts()) text += t.text + "\n\n";
    } else {
      text = read_text_file(c.forced_text);
    }
    engine->start_forced(encode_with_bos(*in.tokenizer, text));
  } else {
    engine->start_stream(c.prompts.empty() ? builtin_prompts() : load_mt_bench(c.prompts));
  }
  return engine;
}

std::string model_display_name(const std::string& path) {
  if (is_synthetic_path(path)) return path;
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace h2o
