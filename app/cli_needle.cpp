// h2o-cli needle: what eviction forgets (SEMANTICS.md, "Needles"). A needle
// planted at each depth of a haystack at each context length, every policy
// teacher-forced through it; per (layer, KV head) how much of the needle each
// cache holds at the question and at the answer, and how well it recalls the
// answer, with and without the needle.
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <unistd.h>

#include "app/cli_support.h"
#include "app/encode_progress.h"
#include "app/eval_lengths.h"
#include "app/needle_report.h"
#include "app/policy_rows.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/json_text.h"
#include "core/base/run_files.h"
#include "core/base/version.h"
#include "core/needle/needle_grid.h"
#include "core/runtime/kv_memory_account.h"
#include "core/studio/assets.h"
#include "core/studio/run_log.h"
#include "core/text/chat_template.h"
#include "core/text/token_ids.h"

namespace h2o::cli {
namespace {

// What a presenter would plant in the demo's King James text, and ask back.
constexpr const char* kDefaultNeedle = "The secret word is Bethlehem.";
constexpr const char* kDefaultQuestion = "What is the secret word? The secret word is";
constexpr const char* kDefaultAnswer = "Bethlehem.";

// One of the four inputs: text (a literal, or a file's text for the
// haystack) or an ids file, never both.
struct InputFlags {
  const char *text_flag, *ids_flag;
  const std::string &text, &ids;
};

void refuse_both(const InputFlags& in, const Flags& f) {
  if (!in.text.empty() && !in.ids.empty())
    fail(in.ids_flag, std::string("give it or ") + in.text_flag + ", not both");
  // Given, but empty: not the default in disguise.
  if (f.given(in.text_flag) && in.text.empty()) fail(in.text_flag, "is empty");
  if (f.given(in.ids_flag) && in.ids.empty()) fail(in.ids_flag, "is empty: give a file of token ids");
}

// The haystack's ids: the --haystack-ids file, or the --haystack text file
// (the assets' held-out text by default) encoded without BOS as far as `needed` tokens.
std::vector<int> haystack_ids(const NeedleFlags& nf, const Loaded& in, const std::string& assets, int64_t needed,
                              std::string& named) {
  if (!nf.haystack_ids.empty()) {
    named = nf.haystack_ids;
    return read_token_ids(nf.haystack_ids, in.model->config.vocab_size);
  }
  std::string path = nf.haystack;
  if (path.empty()) path = default_inputs(assets).forced_text;
  if (path.empty()) fail("--haystack", "give --haystack FILE or --haystack-ids FILE (no held-out text in the assets)");
  named = path;
  const TextFile file(path);
  std::vector<int> ids;
  encode_with_progress(*in.tokenizer, file.text(), "needle", [&](std::span<const int> part) {
    ids.insert(ids.end(), part.begin(), part.end());
    return int64_t(ids.size()) < needed;
  }, &file);
  return ids;
}

// A needle, question or answer: the ids file, or the text (a literal) encoded alone, without BOS.
std::vector<int> short_input(const InputFlags& in, const char* default_text, const Loaded& loaded,
                             const ChatTemplate* wrap = nullptr) {
  if (!in.ids.empty()) return read_token_ids(in.ids, loaded.model->config.vocab_size);
  const std::string text = in.text.empty() ? default_text : in.text;
  return wrap ? wrap->encode_turn(*loaded.tokenizer, text, false) : loaded.tokenizer->encode(text);
}

// How an input is named in errors and the manifest: its ids file, its text flag, or its default.
std::string input_name(const InputFlags& in) {
  return !in.ids.empty() ? in.ids : in.text.empty() ? std::string(in.text_flag) + " (default)" : in.text_flag;
}

nlohmann::json describe_needle(const NeedleGridSpec& spec, const NeedleNames& names, const Backend& backend) {
  nlohmann::json policies = nlohmann::json::array();
  for (const PolicyConfig& p : spec.policies) policies.push_back(policy_json(p));
  return {{"haystack", {{"from", names.haystack}, {"tokens", spec.input.haystack.size()}}},
          {"needle", {{"from", names.needle}, {"ids", spec.input.needle}}},
          {"question", {{"from", names.question}, {"ids", spec.input.question}}},
          {"answer", {{"from", names.answer}, {"ids", spec.input.answer}}},
          {"lengths", spec.lengths},
          {"depths", spec.depths},
          {"policies", policies},
          {"prefill_chunk", spec.chunk},
          {"batched", spec.batched},
          {"prefix_sharing", spec.share_prefix},
          {"backend", {{"name", backend.name()}, {"describe", backend.describe()}}}};
}

// "needle: 12 of 48 streams" on stderr, in place on a terminal.
void show_progress(int done, int all) {
  static const bool terminal = isatty(STDERR_FILENO);
  if (!terminal && done != all) return;
  std::cerr << "\rneedle: " << done << " of " << all << " streams" << (done == all || !terminal ? "\n" : "")
            << std::flush;
}

// The grid's shape from the flags: lengths, depths, chunk, batching, prefix sharing.
NeedleGridSpec grid_shape(const Flags& f, const NeedleFlags& nf) {
  NeedleGridSpec spec;
  spec.lengths = parse_lengths(nf.lengths);
  for (int d : parse_flag_ints(nf.depths, "--depths", "depth", 0, 100)) spec.depths.push_back(d);
  spec.chunk = f.given("--prefill-chunk") ? f.prefill_chunk : 1;  // as eval feeds a text, and the references
  if (spec.chunk < 1) fail("--prefill-chunk", "must be >= 1, got " + std::to_string(spec.chunk));
  spec.batched = f.batched || batched_by_default(f.backend);
  spec.share_prefix = !nf.no_prefix_sharing;
  return spec;
}

// The four inputs, each as text or ids: into spec.input, checked; `names` says where each came from.
void read_inputs(const Flags& f, const NeedleFlags& nf, const Loaded& in, const std::string& assets,
                 NeedleGridSpec& spec, NeedleNames& names) {
  const InputFlags needle{"--needle", "--needle-ids", nf.needle, nf.needle_ids};
  const InputFlags question{"--question", "--question-ids", nf.question, nf.question_ids};
  const InputFlags answer{"--answer", "--answer-ids", nf.answer, nf.answer_ids};
  std::optional<ChatTemplate> wrap;
  if (!f.chat_template.empty()) wrap = template_from_pattern(f.chat_template);
  NeedleCase& c = spec.input;
  c.bos = in.tokenizer->bos_id();
  c.needle = short_input(needle, kDefaultNeedle, in);
  c.question = short_input(question, kDefaultQuestion, in, wrap ? &*wrap : nullptr);
  c.answer = short_input(answer, kDefaultAnswer, in);
  names = {"", input_name(needle), input_name(question), input_name(answer)};
  c.haystack = haystack_ids(nf, in, assets, spec.lengths.back(), names.haystack);
  check_needle_case(c, spec.lengths, spec.depths, names);
}

// The plots (where this build draws them) and the manifest, then every file published together.
void publish(RunFiles& files, const std::string& out, const NeedleReport& report, nlohmann::json manifest) {
  if (cli::can_plot()) {
    for (const NeedlePlot& plot : needle_plots(report)) {
      files.add(out + "/" + plot.file + ".png") << plot.png;
      files.add(out + "/" + plot.file + ".pdf") << plot.pdf;
    }
  } else {
    std::cerr << "needle: no plots: this h2o-cli was built without cairo (libcairo2-dev); needle.csv has the numbers\n";
  }
  files.add(out + "/manifest.json") << json_dump(manifest, 2) << "\n";
  files.publish();
}

}  // namespace

int run_needle(Flags& f, const NeedleFlags& nf, const char* argv0, const std::string& command_line) {
  const std::vector<InputFlags> four = {{"--haystack", "--haystack-ids", nf.haystack, nf.haystack_ids},
                                        {"--needle", "--needle-ids", nf.needle, nf.needle_ids},
                                        {"--question", "--question-ids", nf.question, nf.question_ids},
                                        {"--answer", "--answer-ids", nf.answer, nf.answer_ids}};
  for (const InputFlags& in : four) refuse_both(in, f);
  if (!f.given("--policies")) f.policies = "full,streaming,h2o,tova";
  NeedleGridSpec spec = grid_shape(f, nf);
  Loaded in = load_inputs(f, argv0);
  const std::string out = nf.out.empty() ? default_out_dir("needle") : nf.out;
  std::vector<FlagPath> inputs = cli::model_inputs(f.model, *in.model, in.tokenizer_path);
  for (const InputFlags& i : four)
    if (!i.ids.empty()) inputs.push_back({i.ids_flag, i.ids});
  if (!nf.haystack.empty()) inputs.push_back({"--haystack", nf.haystack});
  refuse_outputs_over_inputs({{"--out", out + "/needle.csv"}, {"--out", out + "/needle_heads.csv"}}, inputs);
  NeedleNames names;
  read_inputs(f, nf, in, find_assets_dir(argv0), spec, names);
  for (const PolicyRow& row : policy_rows(f, nf, 0)) spec.policies.push_back(row.policy);
  for (PolicyConfig& p : spec.policies) p.shape_kv(in.model->config.head_dim());
  check_budgets_fit_memory(in.model->config, spec.policies);
  std::unique_ptr<Backend> backend = make_backend(in.model, backend_options(f));

  // Opened before the run, so that an unwritable folder fails before any work.
  RunFiles files(out, /*fresh=*/true);
  std::ostream& table = files.add(out + "/needle.csv");
  std::ostream& heads = files.add(out + "/needle_heads.csv");
  std::cerr << "needle: " << spec.lengths.size() << " lengths x " << spec.depths.size() << " depths, "
            << spec.policies.size() << " sessions on " << backend->describe()
            << (spec.share_prefix ? "" : ", no prefix sharing") << "\n";
  nlohmann::json manifest = {{"program", "h2o-studio"}, {"version", version()}, {"command", "needle"},
                             {"command_line", command_line}, {"started", utc_timestamp(std::time(nullptr))},
                             {"model", describe_model(*in.model, true)}, {"needle", describe_needle(spec, names, *backend)}};
  stop_on_signals();
  const auto t0 = std::chrono::steady_clock::now();
  const NeedleGrid grid = run_needle_grid(*backend, spec, {.progress = show_progress, .stop = interrupted});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const NeedleReport report{spec, grid, in.model->config, backend->name()};
  write_needle_csv(report, table);
  write_needle_heads_csv(report, heads);
  print_needle_table(report, std::cout);
  const std::string status = interrupted() ? "interrupted" : "complete";
  manifest.update({{"status", status}, {"partial", status != "complete"},
                   {"finished", utc_timestamp(std::time(nullptr))}, {"seconds", seconds},
                   {"tokens_fed", grid.tokens_fed}, {"peak_kv_allocated_bytes", backend->peak_kv_bytes()}});
  publish(files, out, report, manifest);
  std::cerr << (interrupted() ? "interrupted; partial results: " : "") << "needle: " << grid.tokens_fed
            << " tokens fed in " << std::fixed << std::setprecision(1) << seconds << " s; wrote " << out
            << "/needle.csv, needle_heads.csv" << (cli::can_plot() ? " and the plots" : "") << "\n";
  return interrupted() ? interrupted_exit_code() : 0;
}

CLI::App* add_needle(CLI::App& app, Flags& f, NeedleFlags& nf) {
  CLI::App* needle = app.add_subcommand("needle", "what eviction forgets: needle survival per layer and KV head, and recall");
  add_run_flags(needle, f);
  needle->get_option("--prefill-chunk")->description("tokens per forward pass (default 1, as eval feeds a text and "
                                                     "the references are made; TOVA's kept set depends on it)");
  needle->add_option("--policies", f.policies, "policies compared with full at each budget (default full,streaming,h2o,tova)");
  needle->add_option("--budgets", nf.budgets, "comma-separated budgets (default 64,128,256)");
  needle->add_option("--kv-sweep", nf.kv_sweep, "KV precisions to compare, comma-separated (as eval's)");
  needle->add_option("--haystack", nf.haystack, "haystack text file, encoded without BOS (default: the assets' held-out text)");
  needle->add_option("--haystack-ids", nf.haystack_ids, "haystack as a file of token ids (no BOS)");
  needle->add_option("--needle", nf.needle, std::string("the needle's text (default '") + kDefaultNeedle + "')");
  needle->add_option("--needle-ids", nf.needle_ids, "the needle as a file of token ids");
  needle->add_option("--question", nf.question, std::string("the question's text (default '") + kDefaultQuestion + "')");
  needle->add_option("--question-ids", nf.question_ids, "the question as a file of token ids");
  needle->add_option("--answer", nf.answer, std::string("the answer's text (default '") + kDefaultAnswer + "')");
  needle->add_option("--answer-ids", nf.answer_ids, "the answer as a file of token ids");
  needle->add_option("--lengths", nf.lengths, "context lengths in tokens, BOS included, increasing (default 128,256,512,1024)");
  needle->add_option("--depths", nf.depths, "needle depths in percent of the room, 0...100 (default 0,10,...,100)");
  needle->add_option("--template", f.chat_template, "wrap the question as a user turn: a pattern with {turn} (default: none)");
  needle->add_flag("--no-prefix-sharing", nf.no_prefix_sharing,
                   "feed every stream from its start instead of forking the caches where streams part (for timing)");
  needle->add_option("--out", nf.out, "output folder (default runs/needle-<time>)");
  return needle;
}

}  // namespace h2o::cli
