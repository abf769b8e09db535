// h2o-cli as `cmake --install` lays it out: a copy in <prefix>/bin, away from
// the build folder. It says its version; it looks for its defaults in
// $H2O_ASSETS, then <prefix>/share/h2o-studio (core/studio/assets.h); and
// without the CUDA module beside it (<prefix>/lib/<multiarch>/h2o-studio),
// --backend cuda is one line, not a loader's error, while the CPU runs.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/base/version.h"
#include "tests/assets.h"
#include "tests/cli_runner.h"

using namespace h2o;
using namespace h2o::test;
namespace fs = std::filesystem;

namespace {

// <dir>/bin/h2o-cli, a copy of the one built; with the demo's files linked into <dir>/share/h2o-studio when asked.
fs::path install_copy(const std::string& name, bool with_demo) {
  const fs::path prefix = temp_dir(name);
  fs::create_directories(prefix / "bin");
  fs::copy_file(H2O_CLI_PATH, prefix / "bin" / "h2o-cli");
  if (with_demo) {
    fs::create_directories(prefix / "share" / "h2o-studio");
    for (const char* file : {"kjv-1M.bin", "kjv-tok2k.model", "mt_bench.jsonl", "kjv-valid.txt"})
      fs::create_symlink(fs::absolute(asset(file)), prefix / "share" / "h2o-studio" / file);
  }
  return prefix;
}

// The copy run from its prefix (so that no ../shared/assets lies beside the working directory either).
CliResult run_installed(const fs::path& prefix, const std::string& args,
                        const std::string& env = "env -u H2O_ASSETS ") {
  return run_program("cd " + prefix.string() + " && " + env + (prefix / "bin" / "h2o-cli").string(), args);
}

size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(InstalledLayout, VersionIsTheBuildsWhole) {
  const fs::path prefix = install_copy("installed-version", false);
  const CliResult r = run_installed(prefix, "--version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("h2o-cli ") + version() + "\n");
  // project(VERSION), then where in git the build was made, when it was made from a checkout.
  EXPECT_EQ(std::string(version()).rfind("0.", 0), 0u) << version();
  fs::remove_all(prefix);
}

TEST(InstalledLayout, WithoutTheModuleCudaIsOneLineAndTheCpuRuns) {
  const fs::path prefix = install_copy("installed-cuda", false);
  const std::string model = " --model synthetic:stories260K";
  const CliResult cuda = run_installed(prefix, "info --backend cuda" + model);
  EXPECT_EQ(cuda.exit_code, 1);
  EXPECT_EQ(lines(cuda.err), 1u) << cuda.err;
  const bool built = cuda.err.find("this build has no CUDA backend") == std::string::npos;
  if (built) {
    EXPECT_EQ(cuda.err.rfind("h2o-cli: --backend: cuda: the CUDA backend is not installed (no " + prefix.string() +
                                 "/lib/",
                             0),
              0u)
        << cuda.err;
    EXPECT_NE(cuda.err.find("/h2o-studio/h2o-cuda.so); use --backend cpu"), std::string::npos) << cuda.err;
  }
  const CliResult cpu = run_installed(prefix, "info --backend cpu" + model);
  EXPECT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("backend"), std::string::npos) << cpu.out;
  fs::remove_all(prefix);
}

TEST(InstalledLayout, DefaultsComeFromH2oAssetsThenTheSharedFolderBesideBin) {
  H2O_REQUIRE_ASSET("kjv-1M.bin");
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  const fs::path prefix = install_copy("installed-assets", true);
  const std::string installed = (prefix / "share" / "h2o-studio").string();
  const CliResult r = run_installed(prefix, "info");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("model: " + installed + "/kjv-1M.bin with " + installed + "/kjv-tok2k.model (default)"),
            std::string::npos)
      << r.err;
  // $H2O_ASSETS comes first; one that is not a folder means no assets (a synthetic model), not the next place.
  const std::string shared = fs::canonical(assets_dir()).string();
  const CliResult env = run_installed(prefix, "info", "env H2O_ASSETS=" + shared + " ");
  EXPECT_NE(env.err.find("model: " + shared + "/kjv-1M.bin"), std::string::npos) << env.err;
  const CliResult none = run_installed(prefix, "info", "env H2O_ASSETS=/nonexistent ");
  EXPECT_NE(none.err.find("model: synthetic:"), std::string::npos) << none.err;
  fs::remove_all(prefix);
}
