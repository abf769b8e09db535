#pragma once
// Where the apps look for inputs nobody named, and the demo's default model,
// tokenizer and prompts there. The places, in order (the first that is a
// folder wins): $H2O_ASSETS; the install's share folder beside the program
// (../share/h2o-studio from bin/, where `cmake --install` puts the demo);
// ../shared/assets beside the working directory or the program's folder (a
// source checkout's shared assets).
#include <filesystem>
#include <string>
#include <vector>

namespace h2o {

// The places for an environment's H2O_ASSETS (null: unset) and a program in
// `exe_dir`. A set H2O_ASSETS is the only place: a folder named there that is
// missing means no assets, not the next place.
std::vector<std::string> asset_places(const char* h2o_assets, const std::filesystem::path& exe_dir);

// The first place of this process's (its environment, its executable's
// folder, else argv0's) that is a folder; "" if none.
std::string find_assets_dir(const std::string& argv0 = "");

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
// The tokenizer for `model` chosen without one: the demo's (d.tokenizer) when `model` is the demo's
// model file, which has none of its own (kjv-1M.bin, opened from the window, streamed raw ids); else "".
std::string demo_tokenizer_for(const DefaultInputs& d, const std::string& model);

}  // namespace h2o
