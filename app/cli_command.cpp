// What h2o-cli's commands share (declared, with what each does, in cli_command.h).
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "app/cli_flags.h"
#include "app/cli_support.h"
#include "app/load_progress.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/safe_output.h"
#include "core/base/signal_cleanup.h"
#include "core/policy/budget_ratio.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"
#include "core/studio/assets.h"

namespace h2o::cli {

void stop_on_signals() { stop_at_step_boundaries(true); }

bool interrupted() { return stop_signal() != 0; }

void add_model_flags(CLI::App* sub, Flags& f) {
  add_table_flag(sub, "model", f.model, kCliRun);
  add_table_flag(sub, "tokenizer", f.tokenizer, kCliRun);
}

void add_run_flags(CLI::App* sub, Flags& f) {
  add_model_flags(sub, f);
  sub->add_option("--policy", f.policy, "policy for single-policy commands: " + policy_names());
  for (const PolicyFlag& p : policy_flags()) add_table_flag(sub, p.name, f.params[p.name], kCliRun);
  add_table_flag(sub, "budget", f.budget, kCliRun);
  add_table_flag(sub, "slack", f.slack, kCliRun);
  add_table_flag(sub, "position-rolling", f.rolling, kCliRun);
  add_table_flag(sub, "kv-bits", f.kv_bits, kCliRun);
  add_table_flag(sub, "kv-group", f.kv_group, kCliRun);
  add_table_flag(sub, "kv-residual", f.kv_residual, kCliRun);
  add_table_flag(sub, "backend", f.backend, kCliRun);
  add_table_flag(sub, "precision", f.precision, kCliRun);
  add_table_flag(sub, "threads", f.threads, kCliRun);
  add_table_flag(sub, "kv-limit", f.kv_limit_mib, kCliRun);
  sub->add_option("--temperature", f.temperature, "0: greedy");
  sub->add_option("--top-p", f.top_p, "nucleus sampling mass");
  sub->add_option("--seed", f.seed, "sampling seed (shared by all policies)");
  sub->add_option("--max-new-tokens", f.max_new_tokens, "tokens generated per turn");
  sub->add_option("--prefill-chunk", f.prefill_chunk, "prompt tokens per forward pass");
  sub->add_flag("--batched", f.batched, "run all policies in one forward pass (weights read once)");
}

void add_ratio_flags(CLI::App* sub, Flags& f) {
  sub->add_option("--heavy-ratio", f.heavy_ratio,
                  "H2O's heavy part as a fraction h of the input's N tokens: floor(h N), sinks 0 unless given");
  sub->add_option("--recent-ratio", f.recent_ratio, "H2O's recent part as a fraction r: max(1, floor(r N))");
  sub->add_option("--budget-ratio", f.budget_ratio, "the budget as a fraction q: floor(q N), split as --budget is");
}

BudgetRatios ratios_of(const Flags& f) {
  BudgetRatios r;
  if (f.given("--heavy-ratio")) r.heavy = f.heavy_ratio;
  if (f.given("--recent-ratio")) r.recent = f.recent_ratio;
  if (f.given("--budget-ratio")) r.budget = f.budget_ratio;
  validate_ratios(r);
  for (const auto& [ratio, absolute] : {std::pair{"--heavy-ratio", "--heavy"}, std::pair{"--recent-ratio", "--recent"},
                                        std::pair{"--budget-ratio", "--budget"}})
    if (f.given(ratio) && f.given(absolute)) fail(ratio, std::string("give it or ") + absolute + ", not both");
  if ((r.heavy || r.recent) && f.given("--budget"))
    fail(r.heavy ? "--heavy-ratio" : "--recent-ratio", "give the parts as ratios or --budget, not both");
  return r;
}

std::string ratio_flag_given(const Flags& f) {
  for (const char* flag : {"--heavy-ratio", "--recent-ratio", "--budget-ratio"})
    if (f.given(flag)) return flag;
  return "";
}

void refuse_parts_the_kind_lacks(const std::string& kind, const BudgetRatios& r) {
  const PolicyConfig shape = PolicyConfig::named(kind);
  if (r.heavy && !shape.has("heavy")) fail("--heavy-ratio", "the " + kind + " policy has no heavy part (h2o has)");
  if (r.recent && !shape.has("recent")) fail("--recent-ratio", "the " + kind + " policy has no recent part (h2o has)");
}

uint64_t seed(const Flags& f) { return parse_flag_uint(f.seed, "--seed", UINT64_MAX); }

BackendOptions backend_options(const Flags& f) {
  return {f.backend, f.threads, f.precision, f.kv_limit_mib << 20};
}

void report_stops(const Engine& engine, const StepRecord& r) {
  for (const std::string& line : stop_messages(engine.options().policies, r, engine.done()))
    std::cerr << "h2o-cli: " << line << "\n";
}

std::string run_status(const Engine& engine) {
  return interrupted() ? "interrupted" : engine.all_stopped() ? "stopped" : "complete";
}

int run_exit_code(const Engine& engine, const Flags& f) {
  if (interrupted()) return interrupted_exit_code();
  if (!engine.all_stopped()) return 0;
  if (f.kv_limit_mib > 0)
    std::cerr << "h2o-cli: --kv-limit: " << f.kv_limit_mib << " MiB is too small: every session stopped at it"
              << " before the run's end (0: no limit)\n";
  else
    std::cerr << "h2o-cli: every session stopped before the run's end: out of memory\n";
  return 1;
}

int slack_of(const Flags& f) { return f.given("--slack") ? f.slack : default_slack(f.backend); }

std::vector<PolicyEntry> policy_list(const std::string& list, const std::string& flag) {
  std::vector<PolicyEntry> out;
  for (const std::string& name : split_list(list)) out.push_back(parse_policy_entry(name, flag));
  if (out.empty()) fail(flag, "no policy given");
  return out;
}

void refuse_group_without_bits(const Flags& f) {
  if (!f.given("--kv-group") && !f.given("--kv-residual")) return;
  const std::vector<PolicyEntry> entries = policy_list(f.policies, "--policies");
  if (std::none_of(entries.begin(), entries.end(), [](const PolicyEntry& e) { return e.kv.has_value(); }))
    fail(f.given("--kv-group") ? "--kv-group" : "--kv-residual",
         "give --kv-bits 16, 8, 4 or 2 (or name@bits) too; with the backend's own KV type it changes nothing");
}

KvPrecision kv_precision(const Flags& f, const std::string& bits) {
  KvPrecision kv = bits.empty() ? KvPrecision{} : parse_kv_bits(bits);
  kv.group = f.kv_group;
  kv.residual = f.kv_residual;
  kv.shape_given = f.given("--kv-group") || f.given("--kv-residual");  // else the engine shapes them for the model
  if (kv.native()) refuse_group_without_bits(f);
  return kv;
}

PolicySettings policy_parts(const Flags& f) {
  PolicySettings s;
  for (const auto& [name, value] : f.params)
    if (f.given(("--" + name).c_str())) s.given[name] = value;
  s.slack = slack_of(f);
  s.rolling = f.rolling;
  return s;
}

PolicySettings policy_settings(const Flags& f) {
  PolicySettings s = policy_parts(f);
  if (f.given("--budget")) s.budget = f.budget;
  s.kv = kv_precision(f, f.kv_bits);
  return s;
}

std::vector<PolicyConfig> parse_policies(const Flags& f, const std::string& list) {
  std::vector<PolicyConfig> out;
  for (const PolicyEntry& entry : policy_list(list, "--policies")) out.push_back(make_policy(entry, policy_settings(f)));
  return out;
}

Loaded load_inputs(Flags& f, const char* argv0) {
  const DefaultInputs d = default_inputs(find_assets_dir(argv0));
  if (f.model.empty()) {
    f.model = d.model;
    if (f.tokenizer.empty()) f.tokenizer = d.tokenizer;
    std::cerr << "model: " << f.model << (f.tokenizer.empty() ? "" : " with " + f.tokenizer) << " (default)\n";
  }
  Loaded l;
  l.model = load_model_with_progress(f.model);
  l.tokenizer = tokenizer_for(*l.model, f.tokenizer);
  if (std::string warning = tokenizer_mismatch(*l.model, *l.tokenizer, f.tokenizer); !warning.empty())
    std::cerr << "warning: " << warning << "\n";
  l.tokenizer_path = f.tokenizer;
  return l;
}

EngineOptions engine_options(const Flags& f, std::vector<PolicyConfig> policies) {
  EngineOptions o;
  o.policies = std::move(policies);
  o.sampling = {f.temperature, f.top_p, seed(f)};
  o.max_new_tokens = f.max_new_tokens;
  o.prefill_chunk = f.prefill_chunk;
  o.batched = f.batched;
  o.chat_template = f.chat_template;
  o.validate();
  return o;
}

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

std::string default_out_dir(const std::string& command) {
  return unused_path("runs/" + command + "-" + file_stamp(std::time(nullptr)));
}

PolicyConfig policy_from_ratio(const PolicyEntry& kind, const PolicySettings& base, const BudgetRatios& r, int64_t n,
                               const std::string& what, const std::string& flag, const std::string& label) {
  const PolicySettings sized = apply_ratios(base, r, n, flag);  // its errors name the ratio's flag already
  try {
    return make_policy(kind, sized);
  } catch (const Error& e) {
    fail(flag, label + " of " + std::to_string(n) + " " + what + ": " + e.what());
  }
}

}  // namespace h2o::cli
