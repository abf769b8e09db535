#include "core/studio/assets.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/base/executable_path.h"

namespace h2o {
namespace fs = std::filesystem;

std::vector<std::string> asset_places(const char* h2o_assets, const fs::path& exe_dir) {
  if (h2o_assets && *h2o_assets) return {h2o_assets};
  std::vector<fs::path> places;
  if (!exe_dir.empty()) places.push_back(exe_dir / H2O_SHARE_FROM_BIN);
  places.push_back("../shared/assets");
  places.push_back("shared/assets");
  // build/app/h2o-cli -> <repo>/../shared/assets
  fs::path up = exe_dir;
  for (int level = 0; level < 4 && !up.empty(); ++level, up = up.parent_path())
    places.push_back(up / ".." / "shared" / "assets");
  std::vector<std::string> out;
  for (const fs::path& p : places) out.push_back(p.lexically_normal().string());
  return out;
}

std::string find_assets_dir(const std::string& argv0) {
  fs::path exe_dir = executable_dir();
  std::error_code ec;
  if (exe_dir.empty() && !argv0.empty()) exe_dir = fs::weakly_canonical(fs::path(argv0), ec).parent_path();
  for (const std::string& place : asset_places(std::getenv("H2O_ASSETS"), exe_dir))
    if (fs::is_directory(place, ec)) return fs::weakly_canonical(place, ec).string();
  return "";
}

std::string demo_tokenizer_for(const DefaultInputs& d, const std::string& model) {
  std::error_code ec;
  if (d.tokenizer.empty() || model.empty() || d.model.rfind("synthetic:", 0) == 0) return {};
  return fs::equivalent(fs::path(model), fs::path(d.model), ec) && !ec ? d.tokenizer : std::string();
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
