// h2o-cli: the headless front end of H2O Studio.
//   stream    MT-Bench side by side through several cache policies, with logs
//   generate  one policy, one prompt (text or ids)
//   eval      teacher-forced perplexity / agreement / KL against the full cache, per budget
//   needle    what eviction forgets: a needle's survival per layer and KV head, and its recall
//   sample    token ids sampled from a model (input for eval on models without a tokenizer)
//   info      what a model or tokenizer file holds
//   tokenize  the token ids of a text under a tokenizer file
//   convert   a model rewritten as GGUF in another weight type (q4_k_m, q8_0, f16, ...)
// Every input error is one line on stderr and a non-zero exit.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <new>

#include "app/cli_command.h"
#include "app/cli_flags.h"
#include "core/base/error.h"
#include "core/base/signal_cleanup.h"
#include "core/base/version.h"

using namespace h2o;
using namespace h2o::cli;

int main(int argc, char** argv) {
  install_signal_cleanup();
  CLI::App app{"H2O Studio command line: KV-cache eviction (full, StreamingLLM, H2O, TOVA) side by side"};
  app.require_subcommand(1);
  // "h2o-cli 0.1.0+1234.gb11d5de": the first line help2man reads for the man page.
  app.set_version_flag("--version", std::string("h2o-cli ") + version(), "print the version and exit");
  cli::one_line_flag_errors(app, "h2o-cli");
  Flags f;

  StreamFlags sf;
  GenerateFlags gf;
  EvalFlags ef;
  NeedleFlags nf;
  SampleFlags smf;
  ConvertFlags cf;
  TokenizeFlags tf;
  CLI::App* stream = add_stream(app, f, sf);
  CLI::App* generate = add_generate(app, f, gf);
  CLI::App* eval = add_eval(app, f, ef);
  CLI::App* needle = add_needle(app, f, nf);
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
    if (*needle) return run_needle(f, nf, argv[0], command_line);
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

