// No output destroys an input or another run, and no fault we can catch
// leaves half a file: through the real h2o-cli, an output that is an input is
// refused with the input intact; a run folder held by a live run, or holding
// an earlier run, is refused; a stale lock and temporaries of a dead run are
// taken over; a full disk (a file-size limit) leaves no run folder; a
// --kv-limit too small for every session ends with a line naming it.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/assets.h"
#include "tests/cli_runner.h"
#include "tests/model_writers.h"

using namespace h2o;
using namespace h2o::test;
namespace fs = std::filesystem;

namespace {

constexpr long kDeadPid = 999999999;  // above any pid_max

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int lines(const std::string& text) { return int(std::count(text.begin(), text.end(), '\n')); }

std::vector<std::string> names_under(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A bad outcome as the README promises it: one line naming `needle`, exit 1.
void expect_refused(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr does not say " << needle << ": " << r.err;
}

// A run that fails midway: its progress lines, then one last line saying why, exit 1.
void expect_failed(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  ASSERT_GT(r.err.size(), 1u);
  const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  EXPECT_NE(last.find(needle), std::string::npos) << "the last line does not say " << needle << ": " << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
}

class CliOutputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = temp_dir("cli-outputs");
    const ModelArrays m = random_arrays(tiny_config(), 7, false);
    write_llama2c(dir_ / "tiny.bin", m);
    std::ofstream(dir_ / "fine.ids") << "1 5 9 13 2 7 7 7 1 5 9 13 2 7 7 7\n";
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string model() { return "--model " + (dir_ / "tiny.bin").string(); }
  // A short stream into `out` (one question, two new tokens).
  static std::string stream_to(const fs::path& out) {
    return "stream --quiet --threads 1 --questions 1 --max-new-tokens 2 " + model() + " --out " + out.string();
  }
  static fs::path dir_;
};
fs::path CliOutputs::dir_;

TEST_F(CliOutputs, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
  const fs::path d = temp_dir("cli-outputs-same");
  fs::copy_file(dir_ / "fine.ids", d / "ids.txt");
  fs::copy_file(dir_ / "tiny.bin", d / "model.bin");
  fs::create_symlink(d / "ids.txt", d / "link.csv");
  const std::string ids = read_all(d / "ids.txt"), weights = read_all(d / "model.bin");
  const std::string ids_path = (d / "ids.txt").string(), model_path = (d / "model.bin").string();
  expect_refused(run_cli("eval --threads 1 " + model() + " --ids " + ids_path + " --csv " + ids_path + " --out " +
                         (d / "run").string()),
                 "--csv: " + ids_path + " is the file given as --ids");
  expect_refused(run_cli("eval --threads 1 " + model() + " --ids " + ids_path + " --csv " + (d / "link.csv").string() +
                         " --out " + (d / "run").string()),
                 "is the file given as --ids");
  expect_refused(run_cli("sample --threads 1 --model " + model_path + " --tokens 4 --out " + model_path),
                 "--out: " + model_path + " is the file given as --model");
  expect_refused(run_cli("convert --model " + model_path + " --type f16 --out " + model_path),
                 "--out: " + model_path + " is the file given as --model");
  EXPECT_EQ(read_all(d / "ids.txt"), ids);
  EXPECT_EQ(read_all(d / "model.bin"), weights);
  EXPECT_EQ(names_under(d), (std::vector<std::string>{"ids.txt", "link.csv", "model.bin"}));
  fs::remove_all(d);
}

// Every output named through a symbolic link that names no file yet writes the file it names and
// keeps the link (docs/RELIABILITY.md's one rule for links), as through a link to an existing file.
TEST_F(CliOutputs, ADanglingLinkHasItsTargetWrittenAndStaysALink) {
  const fs::path d = temp_dir("cli-outputs-dangling");
  const std::string ids = (dir_ / "fine.ids").string();
  const struct {
    std::string name, args;
  } outputs[] = {
      {"eval.csv", "eval --threads 1 " + model() + " --ids " + ids + " --out " + (d / "run").string() + " --csv "},
      {"sample.ids", "sample --threads 1 " + model() + " --tokens 4 --out "},
      {"converted.bin", "convert " + model() + " --type f16 --out "},
  };
  for (const auto& o : outputs) {
    const fs::path link = d / ("link-" + o.name);
    fs::create_symlink(o.name, link);
    const CliResult r = run_cli(o.args + link.string());
    EXPECT_EQ(r.exit_code, 0) << o.args << "\n" << r.err;
    EXPECT_TRUE(fs::is_symlink(link)) << o.name << ": the link was replaced";
    EXPECT_TRUE(fs::is_regular_file(d / o.name)) << o.name << ": its target was not written";
    EXPECT_GT(fs::file_size(d / o.name), 0u) << o.name;
  }
  fs::remove_all(d);
}

TEST_F(CliOutputs, AnEarlierRunIsNeverReplaced) {
  const fs::path out = temp_dir("cli-outputs-again") / "run";
  const std::string stream = stream_to(out);
  ASSERT_EQ(run_cli(stream).exit_code, 0);
  const std::string manifest = read_all(out / "manifest.json");
  EXPECT_EQ(nlohmann::json::parse(manifest).at("partial"), false);
  expect_refused(run_cli(stream), out.string() + ": already holds files (evictions.csv, manifest.json, steps.csv, ...)");
  EXPECT_EQ(read_all(out / "manifest.json"), manifest);
  EXPECT_EQ(names_under(out), (std::vector<std::string>{"evictions.csv", "manifest.json", "steps.csv", "steps.jsonl"}));
  fs::remove_all(out.parent_path());
}

TEST_F(CliOutputs, AFolderInUseByALiveRunIsRefused) {
  const fs::path d = temp_dir("cli-outputs-busy");
  const fs::path out = d / "run";
  // Enough turns that the first run is still going when the second starts,
  // however fast the tiny model streams the assets' 80 questions.
  const fs::path prompts = d / "many.jsonl";
  {
    std::ofstream p(prompts);
    for (int q = 0; q < 5000; ++q)
      p << R"({"question_id": )" << q << R"(, "category": "busy", "turns": ["Tell me a long story.", "Go on."]})"
        << "\n";
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1), ::dup2(null, 2);
    ::execl(H2O_CLI_PATH, H2O_CLI_PATH, "stream", "--quiet", "--threads", "1", "--max-new-tokens", "100000", "--model",
            (dir_ / "tiny.bin").c_str(), "--prompts", prompts.c_str(), "--out", out.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 600 && !fs::exists(out / ".h2o-run.lock"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(out / ".h2o-run.lock"));
  expect_refused(run_cli(stream_to(out)),
                 out.string() + ": in use by process " + std::to_string(pid));
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
  EXPECT_EQ(nlohmann::json::parse(read_all(out / "manifest.json")).at("partial"), true);
  EXPECT_FALSE(fs::exists(out / ".h2o-run.lock")) << "the lock goes with its run";
  fs::remove_all(d);
}

TEST_F(CliOutputs, AStaleLockAndTemporariesOfADeadRunAreTakenOver) {
  const fs::path d = temp_dir("cli-outputs-stale");
  const fs::path out = d / "run";
  fs::create_directories(out);
  std::ofstream(out / ".h2o-run.lock") << kDeadPid << "\n";
  std::ofstream(out / ("steps.jsonl.tmp-" + std::to_string(kDeadPid))) << "{\"step\": 0, \"pha";
  const CliResult r = run_cli(stream_to(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(names_under(out), (std::vector<std::string>{"evictions.csv", "manifest.json", "steps.csv", "steps.jsonl"}));
  fs::remove_all(d);
}

// A write that fails (here past a file-size limit, as on a full disk) stops
// the run with one line; no run folder, no table, no temporary remains.
TEST_F(CliOutputs, AFullDiskLeavesNoRunFolder) {
  const fs::path d = temp_dir("cli-outputs-full");
  const CliResult s = run_cli("stream --quiet --threads 1 --max-new-tokens 100000 " + model() + " --out " +
                                  (d / "stream").string(),
                              "ulimit -f 40; ");
  expect_failed(s, "/stream/steps.jsonl: write failed (disk full?)");
  std::ofstream ids(d / "long.ids");
  for (int i = 0; i < 3000; ++i) ids << (i % 30) + 1 << (i % 32 == 31 ? '\n' : ' ');
  ids.close();
  const CliResult e = run_cli("eval --threads 1 " + model() + " --budgets 8 --ids " + (d / "long.ids").string() +
                                  " --out " + (d / "eval").string(),
                              "ulimit -f 40; ");
  expect_failed(e, ": write failed (disk full?)");
  EXPECT_EQ(names_under(d), (std::vector<std::string>{"long.ids"}));
  fs::remove_all(d);
}

TEST_F(CliOutputs, AKvLimitTooSmallForEverySessionEndsWithALineNamingIt) {
  const fs::path d = temp_dir("cli-outputs-kv");
  const CliResult r = run_cli("stream --quiet --threads 1 --max-new-tokens 400 --model synthetic:stories15M "
                              "--kv-limit 1 --out " + (d / "run").string());
  expect_failed(r, "h2o-cli: --kv-limit: 1 MiB is too small: every session stopped at it before the run's end");
  const auto manifest = nlohmann::json::parse(read_all(d / "run" / "manifest.json"));  // the steps run are kept,
  EXPECT_EQ(manifest.at("status"), "stopped");                                          // marked partial
  EXPECT_EQ(manifest.at("partial"), true);
  fs::remove_all(d);
}

}  // namespace
