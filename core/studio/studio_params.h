#pragma once
// The policy parameters the app's controls, flags and settings hold, read
// from the policy units (core/policy) rather than written for one kind: the
// sinks, which every kind that evicts takes, and the parts a kind splits its
// budget into when it has more than one (H2O: heavy and recent). A kind with
// one part besides the sinks (a window) gets the rest of the budget, so no
// field stands for it.
#include <map>
#include <string>
#include <vector>

namespace h2o {

struct StudioParam {
  std::string name;         // "heavy": the settings key, the flag, the field's name
  std::string kinds;        // short titles of the kinds that take it: "H2O", "StreamingLLM, H2O, TOVA"
  std::vector<std::string> kind_names;  // their names: "h2o"
  bool every_kind = false;  // every kind that evicts takes it (the sinks)
  std::string help;         // what it is: "heavy hitters kept for ... (auto: its share of the budget)"
  std::string label;        // the controls' name: "Sinks", "Heavy (H2O)" (a part not every kind takes names those that do)
  std::string description;  // tooltips and --help: "Attention sinks: ...", "H2O: heavy hitters ..."
  int default_value = 0;    // 0 for a part: automatic
  int min_value = 0;        // the least value a user may give (a part: at least 1, as 0 means automatic)
  bool automatic = false;   // a part: 0 stands for its share of the budget ("auto")
};

// Every parameter shown, in registry order (the sinks first).
const std::vector<StudioParam>& studio_params();
// Each parameter at its default, by name: a StudioConfig's starting values.
std::map<std::string, int> default_studio_params();
// Whether 0 of the setting `name` means "auto" (a part of the budget).
bool is_automatic_param(const std::string& name);

// The budget controls' values made into a split every policy can take: the
// sinks leave room for the least the other parts need; a part given leaves
// room for the parts after it, and when every part of a kind is given the
// last takes exactly the rest. `adjusted` says what changed, in the
// controls' words ("adjusted: heavy 50 → 29 (room for one recent token)"),
// "" if nothing did.
struct BudgetSplit {
  int budget = 64;
  std::map<std::string, int> params;
  std::string adjusted;
};
BudgetSplit fit_budget_split(int budget, std::map<std::string, int> params);

}  // namespace h2o
