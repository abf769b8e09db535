#include "core/policy/config_name.h"

#include <charconv>
#include <vector>

#include "core/base/error.h"

namespace h2o {

namespace {

// "h2o_8_32_256" -> {"h2o", "8", "32", "256"}.
std::vector<std::string> parts_of(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at = name.find('_'); at != std::string::npos; at = name.find('_', start)) {
    parts.push_back(name.substr(start, at - start));
    start = at + 1;
  }
  parts.push_back(name.substr(start));
  return parts;
}

// A whole non-negative number, or -1.
int number_of(const std::string& text) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= 0 ? value : -1;
}

}  // namespace

PolicyConfig policy_from_config_name(const std::string& name, int slack, bool rolling, const std::string& flag) {
  const std::string expected =
      " (expected baseline, streaming_<sinks>_<capacity>, h2o_<sinks>_<recent>_<capacity> or tova_<sinks>_<capacity>)";
  if (name == "baseline") return make_policy("full", {});
  const std::vector<std::string> parts = parts_of(name);
  const std::string& kind = parts[0];
  const size_t numbers = kind == "h2o" ? 3 : 2;
  if ((kind != "streaming" && kind != "h2o" && kind != "tova") || parts.size() != numbers + 1)
    fail(flag, "'" + name + "' is not a configuration name" + expected);
  // Each number named by its part: the message blames the configuration, not a flag never given.
  const std::vector<std::string> names =
      kind == "h2o" ? std::vector<std::string>{"sinks", "recent", "capacity"} : std::vector<std::string>{"sinks", "capacity"};
  const std::string in = "'" + name + "': its ";
  std::vector<int> n;
  for (size_t i = 1; i < parts.size(); ++i) {
    n.push_back(number_of(parts[i]));
    if (n.back() < 0 || n.back() > kMaxCacheTokens)
      fail(flag, in + names[i - 1] + " '" + parts[i] + "' is not a whole number from 0 to " + std::to_string(kMaxCacheTokens) +
                     " (the most tokens a KV head may hold)");
  }
  const int sinks = n[0], capacity = n.back(), recent = kind == "h2o" ? n[1] : 0;
  if (kind == "h2o" && recent < 1) fail(flag, in + "recent part is 0: H2O keeps at least the newest token");
  if (int64_t(sinks) + recent >= capacity)
    fail(flag, "'" + name + "': the capacity " + std::to_string(capacity) + " leaves no room beside " +
                   std::to_string(sinks) + " sinks" + (kind == "h2o" ? " and " + std::to_string(recent) + " recent" : ""));
  PolicySettings s;
  s.budget = capacity;
  s.given["sinks"] = sinks;
  if (kind == "h2o") s.given["recent"] = recent;
  s.slack = slack;
  s.rolling = rolling;
  try {
    return make_policy(kind, s);
  } catch (const Error& e) {
    fail(flag, "'" + name + "': " + e.what());
  }
}

}  // namespace h2o
