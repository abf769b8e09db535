// h2o-cli eval: teacher-forced perplexity / agreement / KL against the full cache, per budget.
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <span>

#include "app/cli_support.h"
#include "app/encode_progress.h"
#include "app/eval_lengths.h"
#include "app/eval_table.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/safe_output.h"
#include "core/policy/budget_ratio.h"
#include "core/policy/config_name.h"
#include "core/runtime/engine.h"
#include "core/studio/run_log.h"
#include "core/studio/run_loop.h"
#include "core/studio/scoring_meter.h"
#include "core/text/token_ids.h"

namespace h2o::cli {

namespace {

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

}  // namespace

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

}  // namespace h2o::cli
