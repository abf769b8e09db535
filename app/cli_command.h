#pragma once
// h2o-cli's commands, one file each (app/cli_<command>.cpp), and what they
// share: the flags every subcommand takes, reading them into policies,
// engine and backend options, loading the model and tokenizer, and how a
// run ends (its status, its exit code, signals). main (h2o_cli.cpp) adds
// each command's flags and runs the one chosen.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/make_backend.h"
#include "core/policy/budget_ratio.h"
#include "core/policy/config_name.h"
#include "core/runtime/engine.h"

namespace h2o::cli {

// Ctrl-C (SIGINT), a polite kill (SIGTERM) and a closed terminal (SIGHUP)
// stop a run at the next step boundary, so its files are closed whole and
// marked "interrupted". Before this (loading, hashing) and in commands
// without steps, a signal removes the temporaries and ends the process.
void stop_on_signals();

bool interrupted();

// Flags every subcommand shares.
struct Flags {
  std::string model, tokenizer, prompts;
  std::string policy = "h2o";
  std::string policies = "full,streaming,h2o";
  std::map<std::string, int> params;  // every policy parameter's flag (--sinks, --window, ...), by name
  int budget = 0, slack = 0;
  bool rolling = false;
  std::string kv_bits;  // "": the backend's own cache type
  int kv_group = KvPrecision{}.group, kv_residual = KvPrecision{}.residual;
  std::string backend = "cpu", precision;
  int threads = 0;
  int64_t kv_limit_mib = 0;
  double heavy_ratio = 0, recent_ratio = 0, budget_ratio = 0;  // read only where given
  float temperature = 0.0f, top_p = 1.0f;
  std::string seed = "42";
  int max_new_tokens = 128, prefill_chunk = 64;
  bool batched = false;
  std::string chat_template;  // "": the model's own template

  CLI::App* sub = nullptr;
  // Whether `flag` was given (false for a flag this subcommand does not take).
  bool given(const char* flag) const {
    const CLI::Option* option = sub->get_option_no_throw(flag);
    return option && option->count() > 0;
  }
};

void add_model_flags(CLI::App* sub, Flags& f);

void add_run_flags(CLI::App* sub, Flags& f);

// Budgets as fractions of the input (generate, eval; stream refuses them).
void add_ratio_flags(CLI::App* sub, Flags& f);

// The ratio flags given, checked: each in (0, 1], and none beside the absolute flag it replaces.
BudgetRatios ratios_of(const Flags& f);

// The first ratio flag given, for the commands that take none ("" if none).
std::string ratio_flag_given(const Flags& f);

// --heavy-ratio / --recent-ratio only size a kind that has those parts (H2O).
void refuse_parts_the_kind_lacks(const std::string& kind, const BudgetRatios& r);

uint64_t seed(const Flags& f);

BackendOptions backend_options(const Flags& f);

// One line for each session that stopped in this step (out of KV memory);
// the run goes on with the others.
void report_stops(const Engine& engine, const StepRecord& r);

// The manifest's status of a run that has ended: every session stopped
// early (out of KV memory) is a partial run, as an interrupted one is.
std::string run_status(const Engine& engine);

// Exit code of a finished run: the signal's, else 1 (with a last line naming
// the flag) when every session stopped early, out of KV memory.
int run_exit_code(const Engine& engine, const Flags& f);

// --slack where given, else the backend's default (0 on the CPU: exact).
int slack_of(const Flags& f);

// The entries of a comma-separated list ("full,h2o,h2o@2bit"; `flag` names the list in errors).
std::vector<PolicyEntry> policy_list(const std::string& list, const std::string& flag);

// Where every precision asked for is the backend's own type: --kv-group and
// --kv-residual would change nothing, unless a policy is named with its own
// bits ("h2o@2bit"), which takes its G and R from them.
void refuse_group_without_bits(const Flags& f);

// The KV precision of --kv-bits (one: K or K,V), --kv-group and --kv-residual.
KvPrecision kv_precision(const Flags& f, const std::string& bits);

// What the flags say of a policy's parts: those given (--sinks, --recent, ...), slack and rolling.
PolicySettings policy_parts(const Flags& f);

// What the flags say of policies: the parts given, the budget, slack, rolling and KV precision.
PolicySettings policy_settings(const Flags& f);

std::vector<PolicyConfig> parse_policies(const Flags& f, const std::string& list);

struct Loaded {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string tokenizer_path;
};

// The model and tokenizer named by the flags, or the demo's defaults.
Loaded load_inputs(Flags& f, const char* argv0);

EngineOptions engine_options(const Flags& f, std::vector<PolicyConfig> policies);

std::string join_args(int argc, char** argv);

// runs/<command>-<time>, or -2, -3, ... after it when a run of the same second has it.
std::string default_out_dir(const std::string& command);

// make_policy, with an error that says which ratio (`flag`, `label`) of how many tokens (`n`, `what`:
// "scored tokens", "prompt tokens") asked for it: a budget of 1 too small for the sinks blamed --sinks.
PolicyConfig policy_from_ratio(const PolicyEntry& kind, const PolicySettings& base, const BudgetRatios& r, int64_t n,
                               const std::string& what, const std::string& flag, const std::string& label);

// ---- the commands: each one's own flags, how they are added, and its run -------------

struct StreamFlags {
  int questions = 0;
  std::string out;
  bool show_text = false;
  bool quiet = false;
};

struct GenerateFlags {
  std::string prompt, prompt_ids;
  bool print_ids = false;
};

// The flags that make a table's sessions (app/policy_rows.h): eval's and needle's.
struct PolicyRowFlags {
  std::string budgets = "32,64,128,256", ratios, configs, kv_sweep;
};

struct EvalFlags : PolicyRowFlags {
  std::string text, ids, out, csv, lengths;
  int max_tokens = 4096;
};

// needle's flags (app/cli_needle.cpp): the four inputs as text or ids, the grid, the outputs.
struct NeedleFlags : PolicyRowFlags {
  std::string haystack, haystack_ids, needle, needle_ids, question, question_ids, answer, answer_ids;
  std::string lengths = "128,256,512,1024", depths = "0,10,20,30,40,50,60,70,80,90,100", out;
  bool no_prefix_sharing = false;
  NeedleFlags() { budgets = "64,128,256"; }
};

struct TokenizeFlags {
  std::string tokenizer, text, text_file;
  bool no_bos = false, specials = false;
};

struct ConvertFlags {
  std::string type = "q4_k_m", out, vocab;
};

// sample's flags.
struct SampleFlags {
  int count = 4096;
  std::string out;
};

CLI::App* add_stream(CLI::App& app, Flags& f, StreamFlags& sf);
int run_stream(Flags& f, const StreamFlags& sf, const char* argv0, const std::string& command_line);
CLI::App* add_generate(CLI::App& app, Flags& f, GenerateFlags& gf);
int run_generate(Flags& f, const GenerateFlags& gf, const char* argv0);
CLI::App* add_eval(CLI::App& app, Flags& f, EvalFlags& ef);
int run_eval(Flags& f, const EvalFlags& ef, const char* argv0, const std::string& command_line);
CLI::App* add_sample(CLI::App& app, Flags& f, SampleFlags& sf);
int run_sample(Flags& f, int count, const std::string& out_path, const char* argv0, const std::string& command_line);
CLI::App* add_info(CLI::App& app, Flags& f);
int run_info(Flags& f, const char* argv0);
CLI::App* add_needle(CLI::App& app, Flags& f, NeedleFlags& nf);
int run_needle(Flags& f, const NeedleFlags& nf, const char* argv0, const std::string& command_line);
CLI::App* add_convert(CLI::App& app, Flags& f, ConvertFlags& cf);
int run_convert(Flags& f, const ConvertFlags& cf, const char* argv0);
CLI::App* add_tokenize(CLI::App& app, TokenizeFlags& tf);
int run_tokenize(CLI::App* sub, const TokenizeFlags& tf);

}  // namespace h2o::cli
