#include "core/studio/assets.h"

#include <cstdlib>
#include <filesystem>
#include <vector>


namespace h2o {
namespace fs = std::filesystem;

std::string find_assets_dir(const std::string& argv0) {
  if (const char* env = std::getenv("H2O_ASSETS"); env && *env) return fs::is_directory(env) ? env : "";
  std::vector<fs::path> candidates = {fs::path("../shared/assets"), fs::path("shared/assets")};
  if (!argv0.empty()) {
    std::error_code ec;
    fs::path exe = fs::weakly_canonical(fs::path(argv0), ec).parent_path();
    // build/app/h2o-cli -> <repo>/../shared/assets
    for (int up = 0; up < 4 && !exe.empty(); ++up, exe = exe.parent_path())
      candidates.push_back(exe / ".." / "shared" / "assets");
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_directory(c, ec)) return fs::weakly_canonical(c, ec).string();
  }
  return "";
}

DefaultInputs default_inputs(const std::string& assets_dir) {
  DefaultInputs d;
  auto have = [&](const char* name) { return !assets_dir.empty() && fs::is_regular_file(fs::path(assets_dir) / name); };
  auto at = [&](const char* name) { return (fs::path(assets_dir) / name).string(); };
  if (have("kjv-1M.bin") && have("kjv-tok2k.model")) {
    d.model = at("kjv-1M.bin");
    d.tokenizer = at("kjv-tok2k.model");
  } else if (have("tokenizer.model")) {
    d.model = "synthetic:stories15M";
    d.tokenizer = at("tokenizer.model");
  } else {
    d.model = "synthetic:stories260K";  // byte tokenizer, vocab 512
  }
  if (have("mt_bench.jsonl")) d.prompts = at("mt_bench.jsonl");
  if (have("kjv-valid.txt")) d.forced_text = at("kjv-valid.txt");
  else if (have("tinystories-valid-sample.txt")) d.forced_text = at("tinystories-valid-sample.txt");
  return d;
}

}  // namespace h2o
