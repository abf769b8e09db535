// h2o-cli convert: a model rewritten as GGUF in another weight type (q4_k_m, q8_0, f16, ...).
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "app/cli_support.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/safe_output.h"
#include "core/model/gguf_writer.h"
#include "core/policy/budget_ratio.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"
#include "core/studio/run_log.h"
#include "core/studio/scoring_meter.h"
#include "core/text/tokenizer.h"

namespace h2o::cli {

int run_convert(Flags& f, const ConvertFlags& cf, const char* argv0) {
  const TypeMix mix = parse_type_mix(cf.type, "--type");
  if (cf.out.empty()) fail("--out", "required (the .gguf file to write)");
  Loaded in = load_inputs(f, argv0);
  std::vector<FlagPath> inputs = cli::model_inputs(f.model, *in.model, in.tokenizer_path);
  inputs.push_back({"--vocab", cf.vocab});
  refuse_outputs_over_inputs({{"--out", cf.out}}, inputs);
  output_file_target(cf.out);  // a folder or a device is refused before the work
  Model model = *in.model;  // views of the same weights
  if (f.given("--vocab") && f.given("--tokenizer")) fail("--tokenizer", "give it or --vocab, not both");
  // The vocabulary the written file carries: --vocab (a GGUF), or --tokenizer (a GGUF or a
  // SentencePiece .model); without either, the model's own.
  const std::string vocab_file = f.given("--vocab") ? cf.vocab : f.given("--tokenizer") ? f.tokenizer : "";
  if (!vocab_file.empty()) {
    GgufVocab v = vocab_of_tokenizer_file(vocab_file);
    if (int(v.vocab.pieces.size()) != model.config.vocab_size)
      fail(vocab_file, "has " + std::to_string(v.vocab.pieces.size()) + " pieces, the model " +
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

CLI::App* add_convert(CLI::App& app, Flags& f, ConvertFlags& cf) {
  CLI::App* convert = app.add_subcommand("convert", "write a model as GGUF in another weight type");
  add_model_flags(convert, f);
  convert->add_option("--type", cf.type, "weight type: " + type_mix_names());
  convert->add_option("--out", cf.out, "the .gguf file to write")->required();
  convert->add_option("--vocab", cf.vocab, "a GGUF whose vocabulary and chat template the file gets (default: the model's own)");
  // add_model_flags' --tokenizer: here the vocabulary the file gets, as --vocab (a GGUF) or a SentencePiece .model.
  return convert;
}

}  // namespace h2o::cli
