// h2o-cli generate: one policy, one prompt (text or ids).
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <iomanip>
#include <iostream>
#include <optional>

#include "app/encode_progress.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/policy/budget_ratio.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"
#include "core/text/token_ids.h"

namespace h2o::cli {

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

CLI::App* add_generate(CLI::App& app, Flags& f, GenerateFlags& gf) {
  CLI::App* generate = app.add_subcommand("generate", "one policy, one prompt");
  add_run_flags(generate, f);
  add_ratio_flags(generate, f);
  generate->add_option("--prompt", gf.prompt, "prompt text (BOS is added)");
  generate->add_option("--prompt-ids", gf.prompt_ids, "prompt as token ids: 1,2,3 (fed as is)");
  generate->add_flag("--print-ids", gf.print_ids, "print the generated ids, space-separated");
  return generate;
}

}  // namespace h2o::cli
