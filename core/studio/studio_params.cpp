#include "core/studio/studio_params.h"

#include <algorithm>
#include <cctype>

#include "core/policy/policy.h"

namespace h2o {

namespace {

constexpr std::string_view kSinks = "sinks";

// A kind's parameters other than the sinks: what its budget is split into.
std::vector<const PolicyParam*> parts_of(const PolicyUnit& unit) {
  std::vector<const PolicyParam*> parts;
  for (const PolicyParam& p : unit.params)
    if (p.name != kSinks) parts.push_back(&p);
  return parts;
}

// The sinks' entry, then every part of a kind that has two or more, once each.
std::vector<StudioParam> collect_params() {
  std::vector<StudioParam> out;
  const auto entry = [&](const PolicyParam& p, bool automatic) -> StudioParam& {
    auto it = std::find_if(out.begin(), out.end(), [&](const StudioParam& s) { return s.name == p.name; });
    if (it != out.end()) return *it;
    StudioParam s;
    s.name = p.name;
    s.help = p.help;
    s.automatic = automatic;
    s.default_value = automatic ? 0 : p.default_value;
    s.min_value = automatic ? std::max(1, p.min_value) : p.min_value;
    out.push_back(s);
    return out.back();
  };
  const auto take = [](StudioParam& s, const PolicyUnit& unit) {
    s.kinds += (s.kinds.empty() ? "" : ", ") + std::string(unit.short_title);
    s.kind_names.push_back(std::string(unit.name));
  };
  int evicting = 0, with_sinks = 0;
  for (const PolicyUnit* unit : policy_units()) {
    if (unit->params.empty()) continue;  // the full cache
    ++evicting;
    for (const PolicyParam& p : unit->params)
      if (p.name == kSinks) take(entry(p, false), *unit), ++with_sinks;
    const auto parts = parts_of(*unit);
    if (parts.size() >= 2)
      for (const PolicyParam* p : parts) take(entry(*p, true), *unit);
  }
  const auto capitalized = [](std::string text) {
    if (!text.empty()) text[0] = char(std::toupper(static_cast<unsigned char>(text[0])));
    return text;
  };
  for (StudioParam& s : out) {
    s.every_kind = s.name == kSinks && with_sinks == evicting;
    if (s.automatic) s.help += " (auto: its share of the budget)";
    s.label = capitalized(s.name) + (s.every_kind ? "" : " (" + s.kinds + ")");
    s.description = s.every_kind ? capitalized(s.help) : s.kinds + ": " + s.help;
  }
  return out;
}

std::string room_for(const std::vector<const PolicyParam*>& parts, size_t after) {
  std::string text;
  for (size_t i = after; i < parts.size(); ++i) {
    const int n = parts[i]->min_value;
    if (n <= 0) continue;
    text += (text.empty() ? "room for " : " and ") + (n == 1 ? std::string("one") : std::to_string(n)) + " " +
            parts[i]->name + (n == 1 ? " token" : " tokens");
  }
  return text.empty() ? "at most budget − sinks" : text;
}

}  // namespace

const std::vector<StudioParam>& studio_params() {
  static const std::vector<StudioParam> params = collect_params();
  return params;
}

std::map<std::string, int> default_studio_params() {
  std::map<std::string, int> values;
  for (const StudioParam& p : studio_params()) values[p.name] = p.default_value;
  return values;
}

bool is_automatic_param(const std::string& name) {
  for (const StudioParam& p : studio_params())
    if (p.name == name) return p.automatic;
  return false;
}

BudgetSplit fit_budget_split(int budget, std::map<std::string, int> params) {
  BudgetSplit s{std::max(2, budget), std::move(params), ""};
  for (auto& [name, value] : s.params) value = std::max(0, value);
  std::vector<std::string> notes;
  // "heavy 50 → 29 (why)": what was asked, what it became, in the controls' words.
  const auto fit = [&](const std::string& name, int& value, int to, const std::string& why) {
    notes.push_back(name + " " + std::to_string(value) + " → " + std::to_string(to) + " (" + why + ")");
    value = to;
  };
  // The sinks leave every kind the least its parts need.
  int least = 1;
  for (const PolicyUnit* unit : policy_units()) {
    int need = 0;
    for (const PolicyParam* p : parts_of(*unit)) need += p->min_value;
    least = std::max(least, need);
  }
  int& sinks = s.params[std::string(kSinks)];
  if (sinks > s.budget - least) fit("sinks", sinks, s.budget - least, "at most budget − " + std::to_string(least));
  const int rest = s.budget - sinks;
  for (const PolicyUnit* unit : policy_units()) {
    const auto parts = parts_of(*unit);
    if (parts.size() < 2) continue;  // one part takes the rest of the budget: nothing to fit
    std::string sum = "sinks";
    for (const PolicyParam* p : parts) sum += std::string(" + ") + p->name;
    int used = 0;
    bool all_given = true;
    for (size_t i = 0; i < parts.size(); ++i) {
      int& v = s.params[parts[i]->name];
      if (v == 0) {  // auto: at least its least
        used += parts[i]->min_value;
        all_given = false;
        continue;
      }
      int after = 0;
      for (size_t j = i + 1; j < parts.size(); ++j) after += parts[j]->min_value;
      if (i + 1 == parts.size() && all_given && used + v != rest) fit(parts[i]->name, v, rest - used, sum + " = budget");
      else if (v > rest - used - after) fit(parts[i]->name, v, rest - used - after, room_for(parts, i + 1));
      used += v;
    }
  }
  for (size_t i = 0; i < notes.size(); ++i) s.adjusted += (i ? ", " : "adjusted: ") + notes[i];
  return s;
}

}  // namespace h2o
