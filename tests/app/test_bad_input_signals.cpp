// SIGTERM and SIGHUP stop `h2o-cli stream` exactly as Ctrl-C does: the run
// ends at the next step, every log file is published whole (manifest with
// "status": "interrupted" and "partial": true, CSV and JSONL files ending in
// a complete line) and no temporary file is left beside them. `sample` keeps
// the ids it has, marked partial in its manifest. A command without steps
// (`convert`) ends at once, removing its temporary; one killed outright
// (SIGKILL) leaves it, and the next run writing there removes it. The same
// holds for h2o-bench-replay's recording; h2o-bench-studio's row processes
// end with it and take their spools.
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

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `program` with `args`, stderr to `err`; returns its pid.
pid_t spawn(const char* program, const std::vector<std::string>& args, const fs::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    std::vector<char*> argv{const_cast<char*>(program)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program, argv.data());
    ::_exit(127);
  }
  return pid;
}

pid_t spawn_cli(const std::vector<std::string>& args, const fs::path& err) { return spawn(H2O_CLI_PATH, args, err); }

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
  EXPECT_EQ(manifest.at("partial"), true);
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

// Waits for a file named `prefix`* in `dir`; its full path, or "" after `limit`.
fs::path wait_for_file(const fs::path& dir, const std::string& prefix, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename().string().rfind(prefix, 0) == 0) return e.path();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A conversion long enough to be caught writing (stories110M to Q4_K_M: seconds).
pid_t spawn_convert(const fs::path& dir) {
  return spawn_cli({"convert", "--model", "synthetic:stories110M", "--type", "q4_k_m", "--out",
                    (dir / "out.gguf").string()},
                   dir / "stderr.txt");
}

// Signals `pid` once it has made a temporary named `prefix`* in `dir`: the program must end by that
// signal and leave nothing there but its stderr (no temporary, no half file).
void interrupted_leaves_nothing(const fs::path& dir, pid_t pid, const std::string& prefix, int sig) {
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_file(dir, prefix, std::chrono::seconds(120)).empty()) << read_all(dir / "stderr.txt");
  ::kill(pid, sig);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status << ": " << read_all(dir / "stderr.txt");
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"stderr.txt"}) << "a temporary or a half file was left";
}

void interrupted_convert_leaves_nothing(int sig) {
  const fs::path dir = h2o::test::temp_dir("convert-signal-" + std::to_string(sig));
  ASSERT_NO_FATAL_FAILURE(interrupted_leaves_nothing(dir, spawn_convert(dir), "out.gguf.tmp-", sig));
  fs::remove_all(dir);
}

// h2o-bench-replay making its recording of `steps` steps in `dir`.
pid_t spawn_bench_replay(const fs::path& dir, int steps) {
  return spawn(H2O_BENCH_REPLAY_PATH,
               {"--model", "synthetic:stories260K", "--steps", std::to_string(steps), "--repeats", "1", "--recording",
                (dir / "r.h2orec.jsonl").string()},
               dir / "stderr.txt");
}

}  // namespace

TEST(CliSignals, SigtermClosesFilesWhole) { interrupted_run_leaves_whole_files(SIGTERM); }
TEST(CliSignals, SigintClosesFilesWhole) { interrupted_run_leaves_whole_files(SIGINT); }
TEST(CliSignals, SighupClosesFilesWhole) { interrupted_run_leaves_whole_files(SIGHUP); }

TEST(CliSignals, ConvertInterruptedLeavesNoTemporary) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(sig);
    interrupted_convert_leaves_nothing(sig);
  }
}

TEST(CliSignals, TemporaryOfAKilledConvertIsRemovedByTheNextOne) {
  const fs::path dir = h2o::test::temp_dir("convert-killed");
  const pid_t pid = spawn_convert(dir);
  ASSERT_GT(pid, 0);
  const fs::path temp = wait_for_file(dir, "out.gguf.tmp-", std::chrono::seconds(120));
  ASSERT_FALSE(temp.empty()) << read_all(dir / "stderr.txt");
  ::kill(pid, SIGKILL);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  ASSERT_TRUE(fs::exists(temp)) << "SIGKILL cannot be caught: its temporary stays";
  const pid_t again = spawn_cli({"convert", "--model", "synthetic:stories260K", "--type", "f16", "--out",
                                 (dir / "out.gguf").string()},
                                dir / "stderr.txt");
  int status = 0;
  ASSERT_EQ(::waitpid(again, &status, 0), again);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_all(dir / "stderr.txt");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"out.gguf", "stderr.txt"}));
  fs::remove_all(dir);
}

TEST(CliSignals, InterruptedSampleKeepsItsIdsMarkedPartial) {
  const fs::path dir = h2o::test::temp_dir("sample-signal");
  const fs::path ids = dir / "ids.txt";
  const pid_t pid = spawn_cli({"sample", "--model", "synthetic:stories260K", "--threads", "1", "--tokens", "10000000",
                               "--temperature", "1", "--out", ids.string()},
                              dir / "stderr.txt");
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(wait_for_file(dir, "ids.txt.tmp-", std::chrono::seconds(60)).empty()) << read_all(dir / "stderr.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << read_all(dir / "stderr.txt");
  std::istringstream text(read_all(ids));
  int64_t count = 0;
  for (int id; text >> id;) ++count;
  EXPECT_GT(count, 0);
  const auto manifest = nlohmann::json::parse(read_all(dir / "ids.txt.manifest.json"));
  EXPECT_EQ(manifest.at("status"), "interrupted");
  EXPECT_EQ(manifest.at("partial"), true);
  EXPECT_EQ(manifest.at("tokens_asked"), 10000000);
  EXPECT_EQ(manifest.at("tokens_written"), count);
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"ids.txt", "ids.txt.manifest.json", "stderr.txt"}));
  fs::remove_all(dir);
}

// h2o-bench-replay makes its recording under a temporary name: interrupted, it
// leaves none (a half recording under the final name was taken as made by the
// next run, which exited 0); killed outright, its temporary is removed by the next.
TEST(BenchSignals, AnInterruptedBenchReplayLeavesNoRecording) {
  const fs::path dir = h2o::test::temp_dir("bench-replay-signal");
  ASSERT_NO_FATAL_FAILURE(interrupted_leaves_nothing(dir, spawn_bench_replay(dir, 1000000), "r.h2orec.jsonl.tmp-", SIGTERM));

  const pid_t killed = spawn_bench_replay(dir, 1000000);
  const fs::path temp = wait_for_file(dir, "r.h2orec.jsonl.tmp-", std::chrono::seconds(120));
  ASSERT_FALSE(temp.empty()) << read_all(dir / "stderr.txt");
  ::kill(killed, SIGKILL);
  ASSERT_EQ(::waitpid(killed, nullptr, 0), killed);
  const pid_t again = spawn_bench_replay(dir, 20);
  int status = 0;
  ASSERT_EQ(::waitpid(again, &status, 0), again);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_all(dir / "stderr.txt");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"r.h2orec.jsonl", "stderr.txt"}));
  fs::remove_all(dir);
}

// h2o-bench-studio runs each row in a child process: the child ends with its parent however the
// parent ends (SIGTERM, SIGKILL), taking its recording spool with it; once it went on writing, an
// orphan, and left the spool behind.
TEST(BenchSignals, ABenchStudioRowEndsWithItsProgramAndLeavesNoSpool) {
  for (int sig : {SIGTERM, SIGKILL}) {
    SCOPED_TRACE(sig);
    const fs::path dir = h2o::test::temp_dir("bench-studio-signal-" + std::to_string(sig));
    fs::create_directory(dir / "spool");
    const pid_t pid = spawn(H2O_BENCH_STUDIO_PATH,
                            {"--shapes", "stories15M", "--panes", "2", "--steps", "10000000", "--spool-dir",
                             (dir / "spool").string()},
                            dir / "stderr.txt");
    ASSERT_GT(pid, 0);
    const fs::path spool = wait_for_file(dir / "spool", "h2o-bench-studio-", std::chrono::seconds(120));
    ASSERT_FALSE(spool.empty()) << read_all(dir / "stderr.txt");
    const std::string name = spool.filename().string();  // h2o-bench-studio-<the child's pid>.jsonl
    const pid_t child = pid_t(std::stol(name.substr(name.rfind('-') + 1)));
    ::kill(pid, sig);
    ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
    // Gone, or a zombie nobody reaps (a container's init may not): either way it writes no more.
    const auto running = [child] {
      std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
      std::string pid_field, comm, state;
      return stat >> pid_field >> comm >> state && state != "Z" && state != "X";
    };
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (running() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(running()) << "the row's process " << child << " outlived its program";
    EXPECT_EQ(names_in(dir / "spool"), std::vector<std::string>{}) << "the spool was left behind";
    fs::remove_all(dir);
  }
}
