#pragma once
// How H2O Studio turns its settings into a running engine: the chosen
// policies from one budget, the engine options, the inputs. Qt-free, so that
// the worker thread, the tests and a replay agree on one definition. The
// member initialisers below are the app's defaults (the one table of them).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <nlohmann/json_fwd.hpp>

#include "core/runtime/engine.h"
#include "core/studio/studio_params.h"

namespace h2o {

struct StudioConfig {
  std::string model, tokenizer, prompts;  // "" prompts: the built-in ones
  bool forced = false;                    // teacher-forced text instead of MT-Bench
  std::string forced_text;                // the text file fed in forced mode ("": the built-in prompts' text)
  std::string backend = "cpu";
  int threads = 0;  // 0: every core but one (studio_threads)
  int kv_limit_mib = 0;  // KV memory of all sessions together (0: none); the one that needs more stops
  // KV precision of every pane (SEMANTICS.md "KV precision"): "16", "8", "4",
  // "2" or "K,V" bits; "": the backend's own type. A pane named "h2o@2bit" in
  // `policies` keeps its own bits. G and R as --kv-group / --kv-residual.
  std::string kv_bits;
  int kv_group = 0, kv_residual = 0;  // 0: not given, shaped for the model and the budget (SEMANTICS)
  std::vector<std::string> policies = {"full", "streaming", "h2o"};  // the panes, in order (2 to 4)
  int budget = 64;
  // The policies' parameters by name (studio_params.h): the sinks, and the
  // parts a kind splits its budget into (0: auto, its share).
  std::map<std::string, int> params = default_studio_params();
  int slack = -1;  // -1: the backend's default (default_slack: 0 on the CPU, kDeviceSlack on a GPU)
  bool rolling = false;
  int max_new_tokens = 128;
  bool greedy = false;
  float temperature = 0.8f;
  uint64_t seed = 42;
  int capture_layer = 0;
};

// The fewest and the most policies shown side by side (the app's panes).
inline constexpr int kMinStudioPolicies = 2, kMaxStudioPolicies = 4;

// Every setting of a StudioConfig with its key, once: its JSON (below), the
// app's remembered settings (QSettings) and the restart question all walk
// this list, so a new setting is one line here. `Config`: StudioConfig or
// const StudioConfig; `visit(key, field)`.
template <class Config, class Visit>
void for_each_studio_field(Config& c, Visit&& visit) {
  visit("model", c.model);
  visit("tokenizer", c.tokenizer);
  visit("prompts", c.prompts);
  visit("forced", c.forced);
  visit("forced_text", c.forced_text);
  visit("backend", c.backend);
  visit("threads", c.threads);
  visit("kv_limit_mib", c.kv_limit_mib);
  visit("policies", c.policies);
  visit("budget", c.budget);
  for (auto& [name, value] : c.params) visit(name.c_str(), value);
  visit("slack", c.slack);
  visit("rolling", c.rolling);
  visit("kv_bits", c.kv_bits);
  visit("kv_group", c.kv_group);
  visit("kv_residual", c.kv_residual);
  visit("max_new_tokens", c.max_new_tokens);
  visit("greedy", c.greedy);
  visit("temperature", c.temperature);
  visit("seed", c.seed);
  visit("layer", c.capture_layer);
}

// The settings as JSON (a recording's header) and back (unknown keys ignored,
// missing ones and values of the wrong type left at their defaults).
nlohmann::json studio_config_json(const StudioConfig& config);
StudioConfig studio_config_from_json(const nlohmann::json& j);

// What the controls show for a recording that kept no settings (older
// files): `base` (the controls as they were) with the cache settings its
// panes give — the policy list (with their own precisions), the mode, and the
// budget, parameters, slack and position rolling of the first that evicts.
StudioConfig studio_config_from_policies(StudioConfig base, const std::vector<PolicyConfig>& policies, bool forced);

// What differs between two settings that restarts a run (the view does not),
// as a teacher reads it: "budget 64 → 32, device cpu → cuda, tokenizer
// default → a.model, heavy auto → 12" ("" : nothing that restarts).
std::string studio_config_changes(const StudioConfig& from, const StudioConfig& to);

// The chosen policies, in pane order, from one budget. Throws Error naming the setting.
std::vector<PolicyConfig> studio_policies(const StudioConfig& config);
EngineOptions studio_engine_options(const StudioConfig& config);

struct StudioInputs {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string model_path, tokenizer_path;
  std::string tokenizer_warning;  // tokenizer_mismatch's line, shown while the model runs
};
// Loads the model and its tokenizer (slow for big files: call off the GUI thread);
// `progress` hears how far the model's weights are made and may stop them (load_model).
StudioInputs load_studio_inputs(const StudioConfig& config, const LoadProgress& progress = {});

// A new engine on loaded inputs and a backend made for them (h2o::make_backend
// with studio_backend_options; core/backends provides it), started on the
// prompts (stream) or on the text file (forced). Throws Error.
BackendOptions studio_backend_options(const StudioConfig& config);
// The CPU threads the app's engine runs on: `asked` if above 0, else every
// core but one. The window's thread needs a core the moment a frame is due;
// when the engine holds them all, the scheduler takes one from a pool worker
// mid-job and every fork-join of that step waits for it (2 cores, 2 threads:
// the sessions running beside a repaint decoded at a quarter of the speed of
// the others, and a step took 1.4x as long as with one thread).
int studio_threads(int asked, unsigned cores);
std::unique_ptr<Engine> make_studio_engine(const StudioConfig& config, const StudioInputs& inputs,
                                           std::unique_ptr<Backend> backend);

// "kjv-1M.bin", "synthetic:stories260K": the model's name for titles.
std::string model_display_name(const std::string& path);

}  // namespace h2o
