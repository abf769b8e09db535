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
#include "app/policy_rows.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/safe_output.h"
#include "core/policy/budget_ratio.h"
#include "core/policy/config_name.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"
#include "core/studio/run_log.h"
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
  const std::vector<PolicyRow> rows = policy_rows(f, ef, int64_t(tokens.size()) - 1);
  std::vector<PolicyConfig> policies;
  std::vector<std::string> sized_by;
  for (const PolicyRow& row : rows) policies.push_back(row.policy), sized_by.push_back(row.sized_by);
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
