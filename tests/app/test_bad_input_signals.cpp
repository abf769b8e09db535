// SIGTERM stops `h2o-cli stream` exactly as Ctrl-C does: the run ends at the
// next step, every log file is published whole (manifest with "status":
// "interrupted", CSV and JSONL files ending in a complete line) and no
// temporary file is left beside them.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "tests/assets.h"

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts h2o-cli with `args`, stderr to `err`; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const fs::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    std::vector<char*> argv{const_cast<char*>(H2O_CLI_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(H2O_CLI_PATH, argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits until the run has written some steps (its temporary steps.jsonl is non-empty).
bool wait_for_steps(const fs::path& out, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    std::error_code ec;
    if (fs::is_directory(out, ec))
      for (const auto& e : fs::directory_iterator(out, ec))
        if (e.path().filename().string().rfind("steps.jsonl.tmp-", 0) == 0 && fs::file_size(e.path(), ec) > 4096)
          return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void interrupted_run_leaves_whole_files(int sig) {
  const fs::path dir = h2o::test::temp_dir("signal-" + std::to_string(sig));
  const fs::path out = dir / "logs";
  // Long enough that the signal always lands mid-run.
  const pid_t pid = spawn_cli({"stream", "--model", "synthetic:stories260K", "--max-new-tokens", "100000", "--quiet",
                               "--threads", "1", "--out", out.string()},
                              dir / "stderr.txt");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_for_steps(out, std::chrono::seconds(60))) << read_all(dir / "stderr.txt");
  ::kill(pid, sig);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << read_all(dir / "stderr.txt");

  const auto manifest = nlohmann::json::parse(read_all(out / "manifest.json"));  // throws if not whole JSON
  EXPECT_EQ(manifest.at("status"), "interrupted");
  EXPECT_GT(manifest.at("steps").get<int>(), 0);
  for (const char* name : {"steps.jsonl", "steps.csv", "evictions.csv"}) {
    const std::string text = read_all(out / name);
    ASSERT_FALSE(text.empty()) << name;
    EXPECT_EQ(text.back(), '\n') << name << " ends mid-line";
  }
  std::istringstream jsonl(read_all(out / "steps.jsonl"));
  int rows = 0;
  for (std::string line; std::getline(jsonl, line); ++rows) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_GT(rows, 0);
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  fs::remove_all(dir);
}

}  // namespace

TEST(CliSignals, SigtermClosesFilesWhole) { interrupted_run_leaves_whole_files(SIGTERM); }
TEST(CliSignals, SigintClosesFilesWhole) { interrupted_run_leaves_whole_files(SIGINT); }
