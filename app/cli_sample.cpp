// h2o-cli sample: token ids sampled from a model (input for eval on models without a tokenizer).
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "app/cli_support.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/safe_output.h"
#include "core/base/system_limits.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"
#include "core/studio/run_log.h"
#include "core/studio/scoring_meter.h"

namespace h2o::cli {

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

CLI::App* add_sample(CLI::App& app, Flags& f, SampleFlags& sf) {
  CLI::App* sample = app.add_subcommand("sample", "token ids sampled from the model (full cache, restarts at the context)");
  add_run_flags(sample, f);
  sample->add_option("--tokens", sf.count, "how many ids");
  sample->add_option("--out", sf.out, "ids file to write")->required();
  return sample;
}

}  // namespace h2o::cli
