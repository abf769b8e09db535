#pragma once
// Where the apps look for inputs nobody named: the shared assets folder
// ($H2O_ASSETS, else ../shared/assets beside the working directory or the
// executable), and the demo's default model, tokenizer and prompts in it.
#include <string>

namespace h2o {

std::string find_assets_dir(const std::string& argv0 = "");  // "" if none

struct DefaultInputs {
  std::string model;      // a file, or "synthetic:stories15M:vocab=..." when no trained model is found
  std::string tokenizer;  // "" for the model's own / byte tokenizer
  std::string prompts;    // "" for the built-in prompts
  std::string forced_text;  // held-out text for teacher-forced mode ("" : the built-in prompts' text)
};
// kjv-1M.bin + kjv-tok2k.model + mt_bench.jsonl when the assets are there;
// else a synthetic model (with tokenizer.model if that alone is there); the
// held-out text that goes with them (kjv-valid.txt, else tinystories-valid-sample.txt).
DefaultInputs default_inputs(const std::string& assets_dir);

}  // namespace h2o
