#include "defaults.h"

#include <cstdlib>
#include <filesystem>

#include "error.h"

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
  return d;
}

PolicyConfig policy_for_budget(PolicyKind kind, int budget, int sinks, bool rolling, int slack) {
  PolicyConfig p;
  p.kind = kind;
  p.rolling = rolling;
  p.slack = slack;
  if (kind == PolicyKind::Full) return p;
  if (budget < 1) fail("--budget", "must be at least 1 token, got " + std::to_string(budget));
  if (sinks < 0) fail("--sinks", "must be >= 0, got " + std::to_string(sinks));
  if (sinks >= budget)
    fail("--sinks", std::to_string(sinks) + " sinks leave no room in a budget of " + std::to_string(budget) +
                        " (the newest token must fit)");
  p.sinks = sinks;
  const int rest = budget - sinks;
  p.window = rest;
  p.heavy = rest / 2;
  p.recent = rest - p.heavy;
  return p;
}

}  // namespace h2o
