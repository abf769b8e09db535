// h2o-cli: the headless front end of H2O Studio.
//   stream    MT-Bench side by side through several cache policies, with logs
//   generate  one policy, one prompt (text or ids)
//   eval      teacher-forced perplexity / agreement / KL against the full cache, per budget
//   sample    token ids sampled from a model (input for eval on models without a tokenizer)
//   info      what a model or tokenizer file holds
//   tokenize  the token ids of a text under a tokenizer file
//   convert   a model rewritten as GGUF in another weight type (q4_k_m, q8_0, f16, ...)
// Every input error is one line on stderr and a non-zero exit.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <array>
#include <optional>
#include <span>
#include <sstream>

#include "app/cli_support.h"
#include "app/encode_progress.h"
#include "app/eval_lengths.h"
#include "app/eval_table.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/json_text.h"
#include "core/base/safe_output.h"
#include "core/base/signal_cleanup.h"
#include "core/base/system_limits.h"
#include "core/base/text_file.h"
#include "core/model/gguf_writer.h"
#include "core/policy/budget_ratio.h"
#include "core/policy/config_name.h"
#include "core/runtime/engine.h"
#include "core/studio/assets.h"
#include "core/studio/run_log.h"
#include "core/studio/run_loop.h"
#include "core/studio/scoring_meter.h"
#include "core/text/token_ids.h"

namespace {

using namespace h2o;
using cli::interrupted_exit_code;
using cli::LengthReport;

// Ctrl-C (SIGINT), a polite kill (SIGTERM) and a closed terminal (SIGHUP)
// stop a run at the next step boundary, so its files are closed whole and
// marked "interrupted". Before this (loading, hashing) and in commands
// without steps, a signal removes the temporaries and ends the process.
void stop_on_signals() { stop_at_step_boundaries(true); }
bool interrupted() { return stop_signal() != 0; }

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
  bool given(const char* flag) const { return sub->count(flag) > 0; }
};

void add_model_flags(CLI::App* sub, Flags& f) {
  sub->add_option("--model", f.model, "model file: llama2.c .bin, .gguf, config.json/.safetensors/folder, or synthetic:<shape>[:vocab=N]");
  sub->add_option("--tokenizer", f.tokenizer,
                  "SentencePiece .model, GGUF (its vocabulary) or tokenizer.json (default: the model's own, or the demo's)");
}

void add_run_flags(CLI::App* sub, Flags& f) {
  add_model_flags(sub, f);
  sub->add_option("--policy", f.policy, "policy for single-policy commands: " + policy_names());
  for (const PolicyFlag& p : policy_flags()) sub->add_option("--" + p.name, f.params[p.name], p.help);
  sub->add_option("--budget", f.budget, "tokens per KV head; the policy parameters not given split it (after --sinks)");
  sub->add_option("--slack", f.slack,
                  "let the cache grow to budget+slack before cutting back to budget (default: 0 on the CPU, " +
                      std::to_string(kDeviceSlack) + " on a GPU; 0 is exact)");
  sub->add_flag("--position-rolling", f.rolling, "positions from cache slots instead of stream positions");
  sub->add_option("--kv-bits", f.kv_bits,
                  "KV precision K[,V]: 16, 8, 4 or 2 bits (KIVI; default: the backend's cache type); a policy "
                  "list may also say it per entry, h2o@2bit");
  sub->add_option("--kv-group", f.kv_group, "quantization group G: tokens of a key group, channels of a value group");
  sub->add_option("--kv-residual", f.kv_residual, "the newest R tokens (a multiple of G) stay f16 until G more arrive");
  sub->add_option("--backend", f.backend,
                  backend_choices() + " (cuda-sim: the CUDA backend's code through the SIMT emulation, on the CPU: slow, for checking)");
  sub->add_option("--precision", f.precision,
                  "CUDA weights: f32|f16|bf16|native (default: native for quantised files, else f32)");
  sub->add_option("--threads", f.threads, "CPU threads (0: all cores)");
  sub->add_option("--kv-limit", f.kv_limit_mib,
                  "KV memory of all sessions together, MiB (0: none); a session that needs more stops, the others go on");
  sub->add_option("--temperature", f.temperature, "0: greedy");
  sub->add_option("--top-p", f.top_p, "nucleus sampling mass");
  sub->add_option("--seed", f.seed, "sampling seed (shared by all policies)");
  sub->add_option("--max-new-tokens", f.max_new_tokens, "tokens generated per turn");
  sub->add_option("--prefill-chunk", f.prefill_chunk, "prompt tokens per forward pass");
  sub->add_flag("--batched", f.batched, "run all policies in one forward pass (weights read once)");
}

// Budgets as fractions of the input (generate, eval; stream refuses them).
void add_ratio_flags(CLI::App* sub, Flags& f) {
  sub->add_option("--heavy-ratio", f.heavy_ratio,
                  "H2O's heavy part as a fraction h of the input's N tokens: floor(h N), sinks 0 unless given");
  sub->add_option("--recent-ratio", f.recent_ratio, "H2O's recent part as a fraction r: max(1, floor(r N))");
  sub->add_option("--budget-ratio", f.budget_ratio, "the budget as a fraction q: floor(q N), split as --budget is");
}

// The ratio flags given, checked: each in (0, 1], and none beside the absolute flag it replaces.
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

// The first ratio flag given, for the commands that take none ("" if none).
std::string ratio_flag_given(const Flags& f) {
  for (const char* flag : {"--heavy-ratio", "--recent-ratio", "--budget-ratio"})
    if (f.given(flag)) return flag;
  return "";
}

// --heavy-ratio / --recent-ratio only size a kind that has those parts (H2O).
void refuse_parts_the_kind_lacks(const std::string& kind, const BudgetRatios& r) {
  const PolicyConfig shape = PolicyConfig::named(kind);
  if (r.heavy && !shape.has("heavy")) fail("--heavy-ratio", "the " + kind + " policy has no heavy part (h2o has)");
  if (r.recent && !shape.has("recent")) fail("--recent-ratio", "the " + kind + " policy has no recent part (h2o has)");
}

uint64_t seed(const Flags& f) { return parse_flag_uint(f.seed, "--seed", UINT64_MAX); }

BackendOptions backend_options(const Flags& f) {
  if (f.kv_limit_mib < 0 || f.kv_limit_mib > (int64_t(1) << 40))
    fail("--kv-limit", "must be between 0 (no limit) and 2^40 MiB, got " + std::to_string(f.kv_limit_mib));
  return {f.backend, f.threads, f.precision, f.kv_limit_mib << 20};
}

// One line for each session that stopped in this step (out of KV memory);
// the run goes on with the others.
void report_stops(const Engine& engine, const StepRecord& r) {
  for (const std::string& line : stop_messages(engine.options().policies, r, engine.done()))
    std::cerr << "h2o-cli: " << line << "\n";
}

// The manifest's status of a run that has ended: every session stopped
// early (out of KV memory) is a partial run, as an interrupted one is.
std::string run_status(const Engine& engine) {
  return interrupted() ? "interrupted" : engine.all_stopped() ? "stopped" : "complete";
}

// Exit code of a finished run: the signal's, else 1 (with a last line naming
// the flag) when every session stopped early, out of KV memory.
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

// --slack where given, else the backend's default (0 on the CPU: exact).
int slack_of(const Flags& f) { return f.given("--slack") ? f.slack : default_slack(f.backend); }

// The entries of a comma-separated list ("full,h2o,h2o@2bit"; `flag` names the list in errors).
std::vector<PolicyEntry> policy_list(const std::string& list, const std::string& flag) {
  std::vector<PolicyEntry> out;
  for (const std::string& name : split_list(list)) out.push_back(parse_policy_entry(name, flag));
  if (out.empty()) fail(flag, "no policy given");
  return out;
}

// Where every precision asked for is the backend's own type: --kv-group and
// --kv-residual would change nothing, unless a policy is named with its own
// bits ("h2o@2bit"), which takes its G and R from them.
void refuse_group_without_bits(const Flags& f) {
  if (!f.given("--kv-group") && !f.given("--kv-residual")) return;
  const std::vector<PolicyEntry> entries = policy_list(f.policies, "--policies");
  if (std::none_of(entries.begin(), entries.end(), [](const PolicyEntry& e) { return e.kv.has_value(); }))
    fail(f.given("--kv-group") ? "--kv-group" : "--kv-residual",
         "give --kv-bits 16, 8, 4 or 2 (or name@bits) too; with the backend's own KV type it changes nothing");
}

// The KV precision of --kv-bits (one: K or K,V), --kv-group and --kv-residual.
KvPrecision kv_precision(const Flags& f, const std::string& bits) {
  KvPrecision kv = bits.empty() ? KvPrecision{} : parse_kv_bits(bits);
  kv.group = f.kv_group;
  kv.residual = f.kv_residual;
  kv.shape_given = f.given("--kv-group") || f.given("--kv-residual");  // else the engine shapes them for the model
  if (kv.native()) refuse_group_without_bits(f);
  return kv;
}

// What the flags say of a policy's parts: those given (--sinks, --recent, ...), slack and rolling.
PolicySettings policy_parts(const Flags& f) {
  PolicySettings s;
  for (const auto& [name, value] : f.params)
    if (f.given(("--" + name).c_str())) s.given[name] = value;
  s.slack = slack_of(f);
  s.rolling = f.rolling;
  return s;
}

// What the flags say of policies: the parts given, the budget, slack, rolling and KV precision.
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

struct Loaded {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string tokenizer_path;
};

// The model and tokenizer named by the flags, or the demo's defaults.
Loaded load_inputs(Flags& f, const char* argv0) {
  const DefaultInputs d = default_inputs(find_assets_dir(argv0));
  if (f.model.empty()) {
    f.model = d.model;
    if (f.tokenizer.empty()) f.tokenizer = d.tokenizer;
    std::cerr << "model: " << f.model << (f.tokenizer.empty() ? "" : " with " + f.tokenizer) << " (default)\n";
  }
  Loaded l;
  l.model = load_model(f.model);
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

// runs/<command>-<time>, or -2, -3, ... after it when a run of the same second has it.
std::string default_out_dir(const std::string& command) {
  return unused_path("runs/" + command + "-" + file_stamp(std::time(nullptr)));
}

// ---- stream ---------------------------------------------------------------

struct StreamFlags {
  int questions = 0;
  std::string out;
  bool show_text = false;
  bool quiet = false;
};

int run_stream(Flags& f, const StreamFlags& sf, const char* argv0, const std::string& command_line) {
  if (sf.questions < 0) fail("--questions", "must be >= 0 (0: all), got " + std::to_string(sf.questions));
  if (const std::string flag = ratio_flag_given(f); !flag.empty())
    fail(flag, "stream has no input length to take a fraction of (an endless stream): give --budget or the "
               "policy's parts");
  Loaded in = load_inputs(f, argv0);
  if (f.prompts.empty()) f.prompts = default_inputs(find_assets_dir(argv0)).prompts;
  std::vector<Turn> turns = f.prompts.empty() ? builtin_prompts() : load_mt_bench(f.prompts, sf.questions);
  if (f.prompts.empty() && sf.questions > 0 && size_t(sf.questions) * 2 < turns.size()) turns.resize(sf.questions * 2);

  Engine engine(in.model, make_backend(in.model, backend_options(f)), in.tokenizer,
                engine_options(f, parse_policies(f, f.policies)));
  engine.start_stream(turns);
  const std::string out = sf.out.empty() ? default_out_dir("stream") : sf.out;
  RunLog log(out, engine,
             {.command = "stream", .command_line = command_line, .model_path = f.model,
              .tokenizer_path = in.tokenizer_path, .prompts_path = f.prompts, .hash_files = true, .started = {},
              .fresh_folder = true});

  std::cerr << "streaming " << turns.size() << " turns through";
  for (const auto& s : engine.sessions()) std::cerr << ' ' << s->policy().describe();
  std::cerr << " on " << engine.backend().describe() << "; logs in " << out << "\n";

  stop_on_signals();
  EngineSource source(engine);
  RunLoop loop(source);
  loop.add_sink(log);
  std::vector<std::string> answers(engine.sessions().size());
  while (!interrupted()) {
    const std::optional<StepRecord> step = loop.step();
    if (!step) break;
    const StepRecord& r = *step;
    report_stops(engine, r);
    for (const SessionRecord& s : r.sessions) answers[size_t(s.session)] += s.text;
    if (!r.turn_end) continue;
    const Turn& t = engine.turns()[r.prompt_index];
    if (!sf.quiet) {
      std::cerr << "turn " << r.prompt_index + 1 << "/" << turns.size() << " (q" << t.question_id << " " << t.category
                << "):";
      for (const auto& s : engine.sessions())
        std::cerr << "  " << s->policy().name() << " " << s->cache().max_size() << " cached, "
                  << format_mib(s->cache().live_bytes()) << ", " << std::fixed << std::setprecision(1)
                  << s->totals().decode_tokens_per_s() << " tok/s";
      std::cerr << "\n";
    }
    if (sf.show_text) {
      std::cout << "### USER: " << t.text << "\n";
      for (size_t i = 0; i < answers.size(); ++i)
        std::cout << "--- " << engine.sessions()[i]->policy().describe() << ":" << answers[i] << "\n";
      std::cout << std::flush;
    }
    for (auto& a : answers) a.clear();
  }
  log.close(run_status(engine));
  std::cerr << (interrupted() ? "interrupted; partial logs: " : "") << "wrote " << out
            << "/{manifest.json,steps.jsonl,steps.csv,evictions.csv}\n";
  for (const auto& s : engine.sessions())
    std::cerr << "  " << std::left << std::setw(44) << s->policy().describe() << std::right << " generated "
              << s->totals().generated << ", decode " << std::fixed << std::setprecision(1)
              << s->totals().decode_tokens_per_s() << " tok/s, KV live " << format_mib(s->cache().live_bytes())
              << ", allocated " << format_mib(s->cache().allocated_bytes())
              << (s->stopped().empty() ? "" : ", stopped early") << "\n";
  return run_exit_code(engine, f);
}

// ---- generate ---------------------------------------------------------------

struct GenerateFlags {
  std::string prompt, prompt_ids;
  bool print_ids = false;
};

// make_policy, with an error that says which ratio (`flag`, `label`) of how many tokens (`n`, `what`:
// "scored tokens", "prompt tokens") asked for it: a budget of 1 too small for the sinks blamed --sinks.
PolicyConfig policy_from_ratio(const PolicyEntry& kind, const PolicySettings& base, const BudgetRatios& r, int64_t n,
                               const std::string& what, const std::string& flag, const std::string& label) {
  const PolicySettings sized = apply_ratios(base, r, n);  // its errors name the ratio already
  try {
    return make_policy(kind, sized);
  } catch (const Error& e) {
    fail(flag, label + " of " + std::to_string(n) + " " + what + ": " + e.what());
  }
}

int run_generate(Flags& f, const GenerateFlags& gf, const char* argv0) {
  Loaded in = load_inputs(f, argv0);
  Turn turn;
  if (f.given("--prompt-ids")) {
    turn.ids = parse_token_list(gf.prompt_ids, "--prompt-ids", in.model->config.vocab_size);
  } else {
    turn.ids = encode_with_bos(*in.tokenizer, gf.prompt);
  }
  // Ratios are fractions of the prompt, BOS included.
  const PolicyEntry entry = parse_policy_entry(f.policy, "--policy");
  const BudgetRatios ratios = ratios_of(f);
  refuse_parts_the_kind_lacks(entry.kind, ratios);
  const char* flag = ratios.budget ? "--budget-ratio" : ratios.heavy ? "--heavy-ratio" : "--recent-ratio";
  const std::string label = ratios.budget ? format_ratio(*ratios.budget) : "the ratios";
  const PolicyConfig policy = ratios.any() ? policy_from_ratio(entry, policy_settings(f), ratios, int64_t(turn.ids.size()),
                                                               "prompt tokens", flag, label)
                                           : make_policy(entry, policy_settings(f));
  if (ratios.any()) std::cerr << "policy: " << policy.describe() << " (from " << turn.ids.size() << " prompt tokens)\n";
  Engine engine(in.model, make_backend(in.model, backend_options(f)), in.tokenizer, engine_options(f, {policy}));
  engine.start_stream({turn});
  stop_on_signals();
  EngineSource source(engine);
  RunLoop loop(source);
  std::vector<int> ids;
  while (!interrupted()) {
    const std::optional<StepRecord> r = loop.step();
    if (!r) break;
    report_stops(engine, *r);
    for (const SessionRecord& s : r->sessions) {
      if (s.token < 0) continue;
      ids.push_back(s.token);
      if (!gf.print_ids) std::cout << s.text << std::flush;
    }
  }
  if (gf.print_ids) {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  }
  std::cout << "\n";
  const auto& t = engine.sessions()[0]->totals();
  std::cerr << ids.size() << " tokens, decode " << std::fixed << std::setprecision(1) << t.decode_tokens_per_s()
            << " tok/s, prefill " << t.prefill_tokens_per_s() << " tok/s, " << engine.backend().describe() << "\n";
  return run_exit_code(engine, f);
}

// ---- eval ---------------------------------------------------------------------

struct EvalFlags {
  std::string text, ids, budgets = "32,64,128,256", ratios, configs, out, csv, lengths, kv_sweep;
  int max_tokens = 4096;
};

// The tokens eval scores: the --ids file, or the --text file encoded with BOM
// first; at least 2 (each token is scored as the prediction of the next), at
// most `limit` (0: all).
std::vector<int> eval_tokens(const EvalFlags& ef, const Loaded& in, int64_t limit) {
  std::vector<int> tokens;
  const std::string& file = ef.ids.empty() ? ef.text : ef.ids;
  if (!ef.ids.empty()) {
    tokens = read_token_ids(ef.ids, in.model->config.vocab_size);
  } else if (!ef.text.empty()) {
    const cli::TextFile file(ef.text);
    const std::string_view text = file.text();
    if (text.empty() || text == "\xEF\xBB\xBF")
      fail(ef.text, text.empty() ? "is empty: no text to score" : "holds only a UTF-8 byte-order mark: no text to score");
    if (in.tokenizer->adds_bos()) tokens.push_back(in.tokenizer->bos_id());
    // Only as far as the tokens scored: a 50 MB text scored over its first 4096 tokens is read that far.
    cli::encode_with_progress(*in.tokenizer, text, "eval", [&](std::span<const int> ids) {
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      return limit <= 0 || int64_t(tokens.size()) < limit;
    }, &file);
  } else {
    fail("eval", "give --text FILE or --ids FILE");
  }
  if (tokens.size() < 2)
    fail(file, "gives " + std::to_string(tokens.size()) +
                   " token; eval scores each token as the prediction of the next and needs at least 2");
  if (limit > 0 && int64_t(tokens.size()) > limit) tokens.resize(size_t(limit));
  return tokens;
}

// One session of eval's table: its policy, and the ratio or configuration
// name that sized it ("" for an absolute budget).
struct EvalRow {
  PolicyConfig policy;
  std::string sized_by;
};


// eval's precisions (kv_precisions: --kv-sweep, else --kv-bits, else the
// backend's own); --kv-group and --kv-residual beside only the backend's own are refused.
std::vector<KvPrecision> eval_precisions(const Flags& f, const EvalFlags& ef) {
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
std::vector<EvalRow> eval_rows(const Flags& f, const EvalFlags& ef, int64_t scored) {
  std::vector<EvalRow> rows = {{PolicyConfig{}, ""}};
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
  const std::vector<KvPrecision> precisions = eval_precisions(f, ef);
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

// --lengths, checked before anything loads: one run over the longest length
// measures every shorter one, which holds while every budget is absolute.
std::vector<int64_t> eval_lengths(const Flags& f, const EvalFlags& ef) {
  if (ef.lengths.empty()) return {};
  const std::vector<int64_t> lengths = cli::parse_lengths(ef.lengths);
  if (f.given("--max-tokens")) fail("--lengths", "give it or --max-tokens, not both (the longest length is the run's)");
  const std::string ratio = !ef.ratios.empty() ? "--ratios" : ratio_flag_given(f);
  if (!ratio.empty())
    fail("--lengths", "not with " + ratio + ": a ratio sizes the cache by the scored length, so each length would "
                      "need its own cache; give --budgets or --configs");
  return lengths;
}

// The stress test's files in the run folder, opened before the run (so an
// unwritable one fails before any work) and published with the logs.
struct LengthOutputs {
  std::ostream* csv = nullptr;
  std::ostream *png = nullptr, *pdf = nullptr;  // null where this build draws no plots
};

LengthOutputs open_length_outputs(RunLog& log, const std::string& out) {
  LengthOutputs o;
  o.csv = &log.add_output(out + "/lengths.csv");
  if (cli::can_plot()) {
    o.png = &log.add_output(out + "/lengths.png");
    o.pdf = &log.add_output(out + "/lengths.pdf");
  } else {
    std::cerr << "eval: no plot: this h2o-cli was built without cairo (libcairo2-dev); lengths.csv has the numbers\n";
  }
  return o;
}

void report_lengths(const LengthReport& report, const LengthOutputs& o) {
  cli::print_length_table(report);
  cli::write_length_csv(report, *o.csv);
  if (o.png) cli::write_length_plot(report, *o.png, *o.pdf);
}

int run_eval(Flags& f, const EvalFlags& ef, const char* argv0, const std::string& command_line) {
  if (ef.max_tokens < 0 || ef.max_tokens == 1)
    fail("--max-tokens", "must be 0 (all) or at least 2 (each token is scored as the prediction of the next), got " +
                             std::to_string(ef.max_tokens));
  const std::vector<int64_t> lengths = eval_lengths(f, ef);
  Loaded in = load_inputs(f, argv0);
  const std::string out = ef.out.empty() ? default_out_dir("eval") : ef.out;
  const std::string table_path = ef.csv.empty() ? out + "/eval.csv" : ef.csv;
  std::vector<FlagPath> inputs = cli::model_inputs(f.model, *in.model, in.tokenizer_path);
  inputs.push_back({ef.ids.empty() ? "--text" : "--ids", ef.ids.empty() ? ef.text : ef.ids});
  refuse_outputs_over_inputs({{"--csv", table_path}}, inputs);
  const std::vector<int> tokens = eval_tokens(ef, in, lengths.empty() ? ef.max_tokens : lengths.back());
  if (!lengths.empty() && int64_t(tokens.size()) < lengths.back())
    fail("--lengths", "length " + std::to_string(lengths.back()) + " is more than the " +
                          std::to_string(tokens.size()) + " tokens of " + (ef.ids.empty() ? ef.text : ef.ids) +
                          (ef.ids.empty() ? " (BOS included)" : ""));
  // Each token but the last is scored as the prediction of the next: ratios are fractions of those.
  const std::vector<EvalRow> rows = eval_rows(f, ef, int64_t(tokens.size()) - 1);
  std::vector<PolicyConfig> policies;
  std::vector<std::string> sized_by;
  for (const EvalRow& row : rows) policies.push_back(row.policy), sized_by.push_back(row.sized_by);
  Engine engine(in.model, make_backend(in.model, backend_options(f)), in.tokenizer, engine_options(f, policies));
  engine.start_forced(tokens);
  RunLog log(out, engine,
             {.command = "eval", .command_line = command_line, .model_path = f.model,
              .tokenizer_path = in.tokenizer_path, .prompts_path = ef.text.empty() ? ef.ids : ef.text,
              .hash_files = true, .started = {}, .fresh_folder = true});
  // Opened before the run, so an unwritable --csv fails before any work; published with the logs.
  std::ostream& table = log.add_output(table_path);
  const LengthOutputs length_outputs = lengths.empty() ? LengthOutputs{} : open_length_outputs(log, out);
  std::cerr << "eval: " << tokens.size() << " tokens, " << policies.size() << " sessions on "
            << engine.backend().describe() << "\n";
  stop_on_signals();
  EngineSource source(engine);
  RunLoop loop(source);
  ScoringMeter meter(policies.size(), lengths);
  loop.add_sink(log);
  loop.add_sink(meter);
  while (!interrupted()) {
    const std::optional<StepRecord> r = loop.step();
    if (!r) break;
    report_stops(engine, *r);
  }
  cli::print_eval_table(engine, meter, sized_by, in.model->path, table);
  if (!lengths.empty()) report_lengths({engine, meter, sized_by, in.model->path}, length_outputs);
  log.close(run_status(engine));
  std::cerr << (interrupted() ? "interrupted; partial results: " : "") << "wrote " << table_path
            << " and the run log in " << out << "\n";
  return run_exit_code(engine, f);
}

// ---- sample -------------------------------------------------------------------

// Tokens sampled from the model with the full cache, in pieces that each start
// with BOS and stay inside the trained context (restarting after EOS too).
int run_sample(Flags& f, int count, const std::string& out_path, const char* argv0, const std::string& command_line) {
  const int64_t most = std::min<int64_t>(INT32_MAX, physical_memory_bytes() / 16);
  if (count < 2 || count > most)
    fail("--tokens", "must be from 2 to " + std::to_string(most) + " (what this machine's memory holds), got " +
                         std::to_string(count));
  if (out_path.empty()) fail("--out", "required");
  Loaded in = load_inputs(f, argv0);
  refuse_outputs_over_inputs({{"--out", out_path}, {"--out", out_path + ".manifest.json"}},
                             cli::model_inputs(f.model, *in.model, in.tokenizer_path));
  cli::SampleOutput output(out_path);
  auto backend = make_backend(in.model, backend_options(f));
  const int ctx = in.model->config.max_seq_len;
  Sampler sampler({f.temperature, f.top_p, seed(f)});
  std::vector<int> ids;
  stop_on_signals();
  PolicyConfig full;  // the full cache, at --kv-bits where given
  full.kv = policy_settings(f).kv;
  while (int(ids.size()) < count && !interrupted()) {
    auto cache = backend->new_cache(full);
    int token = in.tokenizer->bos_id();
    for (int n = 0; n < ctx && int(ids.size()) < count && !interrupted(); ++n) {
      ids.push_back(token);
      try {
        token = feed_one(*backend, *cache, token, sampler.next());
      } catch (const SessionFailure& e) {
        fail("--kv-limit", std::to_string(f.kv_limit_mib) + " MiB is too small to sample a context: " + e.what());
      }
      if (token == in.tokenizer->eos_id()) break;
    }
  }
  output.write(ids, {command_line, in.model->path, in.tokenizer_path, count, interrupted() ? "interrupted" : "complete"});
  std::cerr << (interrupted() ? "interrupted; partial: " : "") << "wrote " << ids.size() << " of " << count
            << " token ids to " << out_path << " (manifest: " << out_path << ".manifest.json)\n";
  return interrupted_exit_code();
}

// ---- tokenize -----------------------------------------------------------------

struct TokenizeFlags {
  std::string tokenizer, text, text_file;
  bool no_bos = false, specials = false;
};

int run_tokenize(CLI::App* sub, const TokenizeFlags& tf) {
  const bool has_text = sub->count("text") > 0, has_file = sub->count("--text-file") > 0;
  if (has_text == has_file) fail("--text-file", "give either TEXT or --text-file PATH, not both or neither");
  // A file is mapped and given back as it is encoded; the ids are printed a part at a time:
  // a 47 MB text held itself and its 13.6 million ids (336 MB at peak), now about one part.
  std::optional<cli::TextFile> file;
  if (has_file) file.emplace(tf.text_file);
  const std::string_view text = file ? file->text() : std::string_view(tf.text);
  const auto tokenizer = load_tokenizer(tf.tokenizer);
  bool first = true;
  const auto print = [&](std::span<const int> ids) {
    for (int id : ids) std::cout << (std::exchange(first, false) ? "" : " ") << id;
    return true;
  };
  if (!tf.no_bos && tokenizer->adds_bos()) print(std::array<int, 1>{tokenizer->bos_id()});
  if (tf.specials) print(tokenizer->encode_with_specials(std::string(text)));
  else cli::encode_with_progress(*tokenizer, text, "tokenize", print, file ? &*file : nullptr);
  std::cout << "\n";
  return 0;
}

// ---- info ---------------------------------------------------------------------

// info --backend: what that backend makes of the model — its device and
// precision, and on a device (cuda, cuda-sim) every byte of weights it
// uploaded. Made before anything is printed, so a refusal is the one line.
std::string backend_info(Flags& f, const std::shared_ptr<const Model>& model) {
  if (!f.given("--backend")) return "";
  const auto backend = make_backend(model, backend_options(f));
  std::string out = "backend     " + backend->describe() + "\n";
  if (const int64_t bytes = backend->device_weight_bytes(); bytes > 0)
    out += "device weights: " + format_mib(bytes) + " (every buffer " + backend->name() +
           " uploads; the KV cache and scratch come on top)\n";
  return out;
}

int run_info(Flags& f, const char* argv0) {
  Loaded in = load_inputs(f, argv0);
  const std::string backend = backend_info(f, in.model);
  const Model& m = *in.model;
  const ModelConfig& c = m.config;
  const ChatTemplate chat = choose_template(*in.tokenizer, "");
  std::ostringstream rope;
  rope << "rope theta " << c.rope_theta;
  if (c.rope_scaling.type != "none") rope << ", " << c.rope_scaling.type << " scaling x" << c.rope_scaling.factor;
  std::cout << "model       " << m.path << "\n"
            << "format      " << m.format << ", " << c.architecture << ", weights " << m.weight_types() << ", "
            << format_mib(m.weight_bytes()) << "\n"
            << "shape       dim " << c.dim << ", hidden " << c.hidden_dim << ", layers " << c.n_layers << ", heads "
            << c.n_heads << ", kv heads " << c.n_kv_heads << " (head dim " << c.head_dim() << ")"
            << (c.attention_bias ? ", q/k/v biases" : "") << "\n"
            << "block       " << (c.norm == NormKind::Layer ? "LayerNorm" : "RMSNorm") << ", "
            << (c.ffn == FfnKind::Gelu ? "GELU MLP" : "SwiGLU") << (c.output_bias ? ", output biases" : "") << ", "
            << (c.parallel_residual ? "parallel" : "sequential") << " residual, RoPE on " << c.rotated_dims() << " of "
            << c.head_dim() << " head dims\n"
            << "vocabulary  " << c.vocab_size << " (BOS " << c.bos_id << ", EOS " << c.eos_id << "), classifier "
            << (m.shared_classifier() ? "shared with the embedding" : "separate") << "\n"
            << "context     " << c.max_seq_len << " trained, " << rope.str() << ", norm eps " << c.norm_eps << "\n"
            << "parameters  " << c.parameter_count() + (m.shared_classifier() ? 0 : m.weights.classifier.numel()) << "\n"
            << "kv bytes    " << int64_t(c.n_layers) * c.kv_dim() * 2 * 4 << " per cached token (f32)\n"
            << "tokenizer   " << in.tokenizer->describe() << "\n"
            << "template    " << chat.name << (in.tokenizer->chat_template().empty() ? " (the model names none)" : "")
            << ", " << json_dump(chat.pattern()) << "\n"
            << backend;
  return 0;
}

// ---- convert ------------------------------------------------------------------

struct ConvertFlags {
  std::string type = "q4_k_m", out, vocab;
};

int run_convert(Flags& f, const ConvertFlags& cf, const char* argv0) {
  const TypeMix mix = parse_type_mix(cf.type, "--type");
  if (cf.out.empty()) fail("--out", "required (the .gguf file to write)");
  Loaded in = load_inputs(f, argv0);
  std::vector<FlagPath> inputs = cli::model_inputs(f.model, *in.model, in.tokenizer_path);
  inputs.push_back({"--vocab", cf.vocab});
  refuse_outputs_over_inputs({{"--out", cf.out}}, inputs);
  output_file_target(cf.out);  // a folder or a device is refused before the work
  Model model = *in.model;  // views of the same weights
  if (f.given("--vocab")) {
    // A vocabulary-only GGUF (or any GGUF) gives the written file its tokenizer and chat template.
    GgufVocab v = load_gguf_vocab(cf.vocab);
    if (int(v.vocab.pieces.size()) != model.config.vocab_size)
      fail(cf.vocab, "has " + std::to_string(v.vocab.pieces.size()) + " pieces, the model " +
                         std::to_string(model.config.vocab_size) + " (synthetic shapes take :vocab=N)");
    model.vocab = std::move(v.vocab);
    model.config.bos_id = v.bos_id;
    model.config.eos_id = v.eos_id;
  }
  std::cerr << "converting " << in.model->path << " (" << in.model->weight_types() << ") to " << cf.out << " ("
            << mix.name << ")\n";
  write_gguf(model, cf.out, mix);
  const auto written = load_model(cf.out);
  std::cerr << "wrote " << cf.out << ": " << written->weight_types() << ", " << format_mib(written->weight_bytes())
            << "\n";
  return 0;
}

// ---- the command line: each subcommand's own flags ---------------------------

// sample's flags.
struct SampleFlags {
  int count = 4096;
  std::string out;
};

CLI::App* add_stream(CLI::App& app, Flags& f, StreamFlags& sf) {
  CLI::App* stream = app.add_subcommand("stream", "MT-Bench side by side through several policies, with logs");
  add_run_flags(stream, f);
  add_ratio_flags(stream, f);  // refused with one line: a stream has no length
  stream->add_option("--policies", f.policies, "comma-separated, any of: " + policy_names());
  stream->add_option("--prompts", f.prompts, "FastChat question.jsonl (default: the assets' mt_bench.jsonl)");
  stream->add_option("--questions", sf.questions, "stop after this many questions (0: all)");
  stream->add_option("--template", f.chat_template,
                     "chat template, {turn} stands for the turn (default: the model's own when recognised, else '" +
                         std::string(kDefaultTemplate) + "')");
  stream->add_option("--out", sf.out, "log folder (default runs/stream-<time>)");
  stream->add_flag("--show-text", sf.show_text, "print each turn's answers on stdout");
  stream->add_flag("--quiet", sf.quiet, "no per-turn progress");
  return stream;
}

CLI::App* add_generate(CLI::App& app, Flags& f, GenerateFlags& gf) {
  CLI::App* generate = app.add_subcommand("generate", "one policy, one prompt");
  add_run_flags(generate, f);
  add_ratio_flags(generate, f);
  generate->add_option("--prompt", gf.prompt, "prompt text (BOS is added)");
  generate->add_option("--prompt-ids", gf.prompt_ids, "prompt as token ids: 1,2,3 (fed as is)");
  generate->add_flag("--print-ids", gf.print_ids, "print the generated ids, space-separated");
  return generate;
}

CLI::App* add_eval(CLI::App& app, Flags& f, EvalFlags& ef) {
  CLI::App* eval = app.add_subcommand("eval", "teacher-forced perplexity, top-1 agreement and KL against full");
  add_run_flags(eval, f);
  add_ratio_flags(eval, f);
  eval->add_option("--policies", f.policies, "policies compared with full at each budget");
  eval->add_option("--text", ef.text, "text file (encoded with the tokenizer, BOS first)");
  eval->add_option("--ids", ef.ids, "file of token ids");
  eval->add_option("--budgets", ef.budgets, "comma-separated budgets (default 32,64,128,256 when no ratio is given)");
  eval->add_option("--ratios", ef.ratios,
                   "comma-separated budgets as fractions q of the scored tokens N: floor(q N) each, beside --budgets");
  eval->add_option("--configs", ef.configs,
                   "seed 004's configurations: baseline, streaming_<sinks>_<capacity>, h2o_<sinks>_<recent>_<capacity>, "
                   "tova_<sinks>_<capacity> (comma-separated)");
  eval->add_option("--kv-sweep", ef.kv_sweep,
                   "KV precisions to compare, comma-separated: each policy (and the full cache) at each of 32 (the "
                   "backend's own type), 16, 8, 4, 2 or k<K>v<V>; instead of --kv-bits");
  eval->add_option("--max-tokens", ef.max_tokens, "score at most this many tokens (0: all)");
  eval->add_option("--lengths", ef.lengths,
                   "stress test: perplexity over the first N tokens at each N (increasing, comma-separated), a "
                   "verdict per session, lengths.csv and a plot (lengths.png, lengths.pdf)");
  eval->add_option("--out", ef.out, "log folder (default runs/eval-<time>)");
  eval->add_option("--csv", ef.csv, "the table as CSV (default <out>/eval.csv)");
  return eval;
}

CLI::App* add_sample(CLI::App& app, Flags& f, SampleFlags& sf) {
  CLI::App* sample = app.add_subcommand("sample", "token ids sampled from the model (full cache, restarts at the context)");
  add_run_flags(sample, f);
  sample->add_option("--tokens", sf.count, "how many ids");
  sample->add_option("--out", sf.out, "ids file to write")->required();
  return sample;
}

CLI::App* add_info(CLI::App& app, Flags& f) {
  CLI::App* info = app.add_subcommand("info", "what a model / tokenizer holds");
  add_model_flags(info, f);
  info->add_option("--backend", f.backend, "also make this backend (" + backend_choices() + ") and say what it holds: its device, and the MiB of weights it uploads");
  info->add_option("--precision", f.precision, "CUDA weights with --backend: f32|f16|bf16|native (default: native for quantised files, else f32)");
  return info;
}

CLI::App* add_convert(CLI::App& app, Flags& f, ConvertFlags& cf) {
  CLI::App* convert = app.add_subcommand("convert", "write a model as GGUF in another weight type");
  add_model_flags(convert, f);
  convert->add_option("--type", cf.type, "weight type: " + type_mix_names());
  convert->add_option("--out", cf.out, "the .gguf file to write")->required();
  convert->add_option("--vocab", cf.vocab, "a GGUF whose vocabulary and chat template the file gets (default: the model's own)");
  return convert;
}

CLI::App* add_tokenize(CLI::App& app, TokenizeFlags& tf) {
  CLI::App* tokenize = app.add_subcommand("tokenize", "print the token ids of a text, space-separated, on one line");
  tokenize->add_option("--tokenizer", tf.tokenizer,
                       "SentencePiece .model, GGUF (its vocabulary; a vocabulary-only file will do) or tokenizer.json")
      ->required();
  tokenize->add_option("text", tf.text, "the text (or give --text-file)");
  tokenize->add_option("--text-file", tf.text_file, "read the text from this file, byte for byte");
  tokenize->add_flag("--no-bos", tf.no_bos,
                     "never put BOS first. Without it BOS comes first only when the vocabulary asks for it, as in "
                     "llama.cpp: a GGUF's tokenizer.ggml.add_bos_token, else yes for SentencePiece and Llama-3, no "
                     "for Qwen2; a tokenizer.json's add_bos_token (tokenizer_config.json) or post-processor");
  tokenize->add_flag("--specials", tf.specials,
                     "recognise special tokens' texts (<|eot_id|>, <|im_start|>, <s>) as those tokens, as chat "
                     "templates need; by default they are plain text");
  return tokenize;
}

}  // namespace

int main(int argc, char** argv) {
  install_signal_cleanup();
  CLI::App app{"H2O Studio command line: KV-cache eviction (full, StreamingLLM, H2O, TOVA) side by side"};
  app.require_subcommand(1);
  // Flag errors (unknown flag, a value that is not a number) are one line
  // like every other input error; CLI11's default adds a second.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    std::string text = e.what();
    std::replace(text.begin(), text.end(), '\n', ' ');
    return "h2o-cli: " + text + " (see --help)\n";
  });
  Flags f;

  StreamFlags sf;
  GenerateFlags gf;
  EvalFlags ef;
  SampleFlags smf;
  ConvertFlags cf;
  TokenizeFlags tf;
  CLI::App* stream = add_stream(app, f, sf);
  CLI::App* generate = add_generate(app, f, gf);
  CLI::App* eval = add_eval(app, f, ef);
  CLI::App* sample = add_sample(app, f, smf);
  CLI::App* info = add_info(app, f);
  CLI::App* convert = add_convert(app, f, cf);
  CLI::App* tokenize = add_tokenize(app, tf);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  const std::string command_line = join_args(argc, argv);
  for (CLI::App* sub : app.get_subcommands()) f.sub = sub;  // the one chosen
  try {
    if (*stream) return run_stream(f, sf, argv[0], command_line);
    if (*generate) return run_generate(f, gf, argv[0]);
    if (*eval) return run_eval(f, ef, argv[0], command_line);
    if (*sample) return run_sample(f, smf.count, smf.out, argv[0], command_line);
    if (*info) return run_info(f, argv[0]);
    if (*tokenize) return run_tokenize(tokenize, tf);
    if (*convert) return run_convert(f, cf, argv[0]);
  } catch (const Error& e) {
    std::cerr << "h2o-cli: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "h2o-cli: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "h2o-cli: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
