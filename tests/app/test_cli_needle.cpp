// h2o-cli needle end to end: its files, its table, its defaults on the demo
// model, and its refusals (one line naming the flag, a non-zero exit, nothing written).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/assets.h"
#include "tests/cli_runner.h"

using namespace h2o::test;

namespace {

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string write_ids(const std::filesystem::path& dir, const std::string& name, const std::string& ids) {
  const std::string path = (dir / name).string();
  std::ofstream(path) << ids << "\n";
  return path;
}

// A haystack, needle, question and answer for stories260K (no tokenizer: ids).
std::string id_inputs(const std::filesystem::path& dir, const std::string& answer = "400 403") {
  std::ostringstream hay;
  for (int i = 0; i < 400; ++i) hay << 3 + (i * 37 + 11) % 500 << ' ';
  return " --haystack-ids " + write_ids(dir, "hay.ids", hay.str()) + " --needle-ids " +
         write_ids(dir, "needle.ids", "400 401 402 403") + " --question-ids " + write_ids(dir, "q.ids", "300 301") +
         " --answer-ids " + write_ids(dir, "a.ids", answer);
}

void expect_refused(const std::string& args, const std::string& message, const std::filesystem::path& out) {
  const CliResult r = run_cli(args + " --out " + out.string());
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << args << ": wrote something";
}

}  // namespace

TEST(CliNeedle, WritesTheGridItsHeadsTheTableAndThePlots) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  const auto dir = temp_dir("needle-ids");
  const auto out = dir / "run";
  const CliResult r = run_cli("needle --model " + asset("stories260K.bin") + id_inputs(dir) +
                              " --lengths 40,80 --depths 0,50,100 --budgets 16 --policies full,streaming,h2o,tova"
                              " --threads 2 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> grid = lines_of(out / "needle.csv");
  ASSERT_EQ(grid.size(), 1u + 2 * 3 * 4);  // lengths x depths x sessions
  EXPECT_EQ(grid[0],
            "length,depth,policy,budget,kv_precision,needle_begin,needle_end,survival_question,survival_answer,"
            "answer_nll,answer_tokens,exact,answer_nll_without");
  EXPECT_NE(grid[1].find("40,0,full,all,f32,1,5,1,1,"), std::string::npos) << grid[1];
  bool streaming = false;
  for (const std::string& row : grid) streaming = streaming || row.find("streaming(sinks=4,window=12") != std::string::npos;
  EXPECT_TRUE(streaming) << "the policy column names the parameters";
  const std::vector<std::string> heads = lines_of(out / "needle_heads.csv");
  EXPECT_EQ(heads.size(), 1u + 2 * 3 * 4 * 5 * 4);  // ... x layers x KV heads
  EXPECT_EQ(heads[0], "length,depth,policy,budget,kv_precision,layer,kv_head,needle_tokens,held_question,held_answer");
  EXPECT_NE(r.out.find("| policy | budget | KV | length | survival at the question |"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(out / "manifest.json"));
#ifdef H2O_WITH_PLOT
  EXPECT_TRUE(std::filesystem::exists(out / "needle-00-full-survival.png"));
  EXPECT_TRUE(std::filesystem::exists(out / "needle-02-h2o-b16-heads.pdf"));
#endif
  std::filesystem::remove_all(dir);
}

// With nothing given: the demo model, its held-out text, and a presenter's needle.
TEST(CliNeedle, RunsOnTheDemoModelWithItsDefaults) {
  H2O_REQUIRE_ASSET("kjv-1M.bin");
  H2O_REQUIRE_ASSET("kjv-valid.txt");
  const auto dir = temp_dir("needle-demo");
  const CliResult r = run_cli("needle --lengths 64,300 --depths 0,100 --budgets 32 --threads 2 --out " +
                              (dir / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(dir / "run" / "needle.csv").size(), 1u + 2 * 2 * 4);  // full and three policies at one budget
  EXPECT_NE(r.out.find("300 (past the trained context)"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(CliNeedle, BadInputsAreOneLineNamingTheFlag) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  const auto dir = temp_dir("needle-bad");
  const std::string base = "needle --model " + asset("stories260K.bin") + id_inputs(dir);
  const auto out = dir / "never";
  expect_refused(base + " --lengths 40 --depths 101", "--depths: depth 101 is above 100", out);
  expect_refused(base + " --lengths 500", "hay.ids: has 400 tokens; a context of 500 needs 495", out);
  expect_refused(base + " --lengths 4", "--lengths: length 4 leaves no room for the needle's 4 tokens (", out);
  expect_refused("needle --model " + asset("stories260K.bin") + " --answer '' --lengths 40", "--answer: is empty", out);
  expect_refused("needle --model " + asset("stories260K.bin") + id_inputs(dir, "") + " --lengths 40", "a.ids", out);
  expect_refused(base + " --needle 'x'", "--needle-ids: give it or --needle, not both", out);
  std::filesystem::remove_all(dir);
}
