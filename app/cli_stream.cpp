// h2o-cli stream: MT-Bench side by side through several cache policies, with logs.
#include "app/cli_command.h"
#include "app/cli_flags.h"

#include <CLI/CLI.hpp>
#include <iomanip>
#include <iostream>
#include <optional>

#include "app/encode_progress.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/policy/budget_ratio.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"
#include "core/studio/assets.h"
#include "core/studio/run_log.h"

namespace h2o::cli {

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

CLI::App* add_stream(CLI::App& app, Flags& f, StreamFlags& sf) {
  CLI::App* stream = app.add_subcommand("stream", "MT-Bench side by side through several policies, with logs");
  add_run_flags(stream, f);
  add_ratio_flags(stream, f);  // refused with one line: a stream has no length
  add_table_flag(stream, "policies", f.policies, kCliStream);
  add_table_flag(stream, "prompts", f.prompts, kCliStream);
  stream->add_option("--questions", sf.questions, "stop after this many questions (0: all)");
  stream->add_option("--template", f.chat_template,
                     "chat template, {turn} stands for the turn (default: the model's own when recognised, else '" +
                         std::string(kDefaultTemplate) + "')");
  stream->add_option("--out", sf.out, "log folder (default runs/stream-<time>)");
  stream->add_flag("--show-text", sf.show_text, "print each turn's answers on stdout");
  stream->add_flag("--quiet", sf.quiet, "no per-turn progress");
  return stream;
}

}  // namespace h2o::cli
