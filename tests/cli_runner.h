#pragma once
// Runs h2o-cli (or h2o-bench, built next to the tests) and captures what it printed.
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace h2o::test {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// `shell` goes before the command, in the same shell: "ulimit -f 64; " runs
// it with a file-size limit (a full disk), "exec " as is.
inline CliResult run_program(const std::string& program, const std::string& args, const std::string& shell = "") {
  static int counter = 0;
  const std::string err_file = "/tmp/h2o-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const std::string cmd = shell + program + " " + args + " 2>" + err_file;
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* e = std::fopen(err_file.c_str(), "r")) {
    while ((n = std::fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
    std::fclose(e);
  }
  std::remove(err_file.c_str());
  return r;
}

inline CliResult run_cli(const std::string& args, const std::string& shell = "") {
  return run_program(H2O_CLI_PATH, args, shell);
}

}  // namespace h2o::test
