// h2o-cli end to end: the MT-Bench stream and its logs, eval, sample, and the
// one-line errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/assets.h"
#include "tests/cli_runner.h"

using namespace h2o::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::vector<std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) row.push_back(cell), cell.clear();
      else cell += c;
    }
    row.push_back(cell);
    rows.push_back(row);
  }
  return rows;
}

int column(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return int(i);
  ADD_FAILURE() << "no column " << name;
  return 0;
}

// One line on stderr, naming `needle`, and a failing exit code.
void expect_one_line_error(const CliResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
}

// `tokens` ids sampled from synthetic stories260K into `ids`: eval's input where no tokenizer is needed.
void sample_ids(const fs::path& ids, int tokens, int seed) {
  const CliResult s = run_cli("sample --model synthetic:stories260K --tokens " + std::to_string(tokens) +
                              " --temperature 1 --seed " + std::to_string(seed) + " --out " + ids.string());
  ASSERT_EQ(s.exit_code, 0) << s.err;
}

}  // namespace

TEST(CliStream, TenMtBenchQuestionsKvFlatForBoundedGrowingForFull) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  H2O_REQUIRE_ASSET("mt_bench.jsonl");
  const fs::path out = temp_dir("stream") / "logs";
  const CliResult r = run_cli("stream --model synthetic:stories15M --tokenizer " + asset("tokenizer.model") +
                              " --prompts " + asset("mt_bench.jsonl") +
                              " --questions 10 --max-new-tokens 24 --threads 2 --quiet --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"manifest.json", "steps.jsonl", "steps.csv", "evictions.csv"})
    EXPECT_TRUE(fs::exists(out / f)) << f;

  // stories15M: 6 layers x 6 KV heads x head dim 48, K and V in f32.
  const int64_t bytes_per_token = 6 * 6 * 48 * 2 * 4;
  const auto rows = read_csv(out / "steps.csv");
  ASSERT_GT(rows.size(), 100u);
  const int policy = column(rows[0], "policy"), live = column(rows[0], "kv_live_bytes"),
            prompt = column(rows[0], "prompt"), alloc = column(rows[0], "kv_allocated_bytes");
  std::map<std::string, std::vector<int64_t>> live_by_policy, alloc_by_policy;
  std::set<int> prompts;
  for (size_t i = 1; i < rows.size(); ++i) {
    live_by_policy[rows[i][policy]].push_back(std::stoll(rows[i][live]));
    alloc_by_policy[rows[i][policy]].push_back(std::stoll(rows[i][alloc]));
    prompts.insert(std::stoi(rows[i][prompt]));
  }
  EXPECT_EQ(prompts.size(), 20u);  // 10 questions x 2 turns
  ASSERT_EQ(live_by_policy.size(), 3u);
  for (const auto& [name, series] : live_by_policy) {
    if (name == "full") {
      for (size_t i = 1; i < series.size(); ++i) ASSERT_GT(series[i], series[i - 1]) << "full must grow";
      EXPECT_GT(series.back(), 500 * bytes_per_token);
    } else {
      // Flat at the budget (64 tokens) once the cache has filled.
      const int64_t at_budget = 64 * bytes_per_token;
      size_t filled = 0;
      while (filled < series.size() && series[filled] < at_budget) ++filled;
      ASSERT_LT(filled, series.size() / 4) << name;
      for (size_t i = filled; i < series.size(); ++i) ASSERT_EQ(series[i], at_budget) << name << " row " << i;
      const auto& a = alloc_by_policy[name];
      EXPECT_EQ(a.back(), a[a.size() / 2]) << name << ": allocated bytes must stay flat";
    }
  }

  std::ifstream mf(out / "manifest.json");
  const auto manifest = nlohmann::json::parse(mf);
  EXPECT_EQ(manifest["status"], "complete");
  EXPECT_EQ(manifest["tokenizer"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(manifest["policies"].size(), 3u);
  EXPECT_EQ(manifest["model"]["vocab_size"], 32000);
  EXPECT_GT(manifest["totals"][0]["decode_tokens_per_s"].get<double>(), 0.0);
}

TEST(CliStream, JsonlAndCsvAgree) {
  const fs::path out = temp_dir("jsonl") / "logs";
  const CliResult r = run_cli("stream --model synthetic:stories260K --questions 1 --max-new-tokens 8 --quiet "
                              "--prompts /nonexistent-so-use-builtin 2>&1 || true");
  // A missing prompt file is an error, not a silent fallback.
  EXPECT_NE(r.out.find("/nonexistent-so-use-builtin"), std::string::npos);
  const CliResult ok = run_cli("stream --model synthetic:stories260K --max-new-tokens 8 --quiet --questions 2 "
                               "--policies full,h2o --budget 16 --out " + out.string());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  std::ifstream jl(out / "steps.jsonl");
  int lines = 0;
  for (std::string line; std::getline(jl, line); ++lines) ASSERT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_EQ(size_t(lines) + 1, read_csv(out / "steps.csv").size());
}

TEST(CliGenerate, SeededSamplingIsReproducible) {
  const std::string args = "generate --model synthetic:stories260K --prompt-ids 1 --max-new-tokens 40 "
                           "--temperature 1 --seed 9 --print-ids --policy h2o --budget 16";
  const CliResult a = run_cli(args), b = run_cli(args), c = run_cli(args + "0");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);  // seed 90
}

TEST(CliGenerate, ATokenizerFarSmallerThanTheModelsVocabularyIsNamedWithBothSizes) {
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  const CliResult r = run_cli("generate --model synthetic:stories15M --tokenizer " + asset("kjv-tok2k.model") +
                              " --prompt hi --max-new-tokens 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;  // it runs; its ids past the tokenizer show as <id>
  EXPECT_NE(r.err.find("kjv-tok2k.model has 2048 pieces but the model's vocabulary has 32000"), std::string::npos) << r.err;
  // Its own vocabulary (a byte tokenizer the model's size): no warning.
  const CliResult own = run_cli("generate --model synthetic:stories15M --prompt hi --max-new-tokens 2");
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.err.find("wrong tokenizer"), std::string::npos) << own.err;
}

TEST(CliEval, ErrorsNameTheRatioFlagOrTheConfigurationPartThatWasGiven) {
  const fs::path dir = temp_dir("eval-blame");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 30, 3));
  const std::string eval = "eval --model synthetic:stories260K --ids " + (dir / "ids.txt").string() + " --out " +
                           (dir / "run").string() + " ";
  const auto said = [&](const std::string& args) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    return r.err;
  };
  // A budget ratio too small for the sinks: --budget-ratio, not --ratios nor --sinks (neither given).
  EXPECT_EQ(said(eval + "--budget-ratio 0.05").rfind("h2o-cli: --budget-ratio: 0.05 of 29 scored tokens: ", 0), 0u);
  EXPECT_EQ(said(eval + "--ratios 0.05").rfind("h2o-cli: --ratios: 0.05 of 29 scored tokens: ", 0), 0u);
  // A ratio that leaves no token at all: the flag that gave it (round 5: --ratios was blamed on --budget-ratio).
  EXPECT_EQ(said(eval + "--ratios 1e-300").rfind("h2o-cli: --ratios: 1e-300 of 29 tokens is a budget of 0 tokens", 0), 0u)
      << said(eval + "--ratios 1e-300");
  EXPECT_EQ(said("generate --model synthetic:stories260K --prompt-ids 1,2,3,4,5 --budget-ratio 0.2")
                .rfind("h2o-cli: --budget-ratio: 0.2 of 5 prompt tokens: ", 0), 0u);
  // A configuration's part by its name, not a flag that was never given.
  EXPECT_NE(said(eval + "--configs h2o_0_0_64").find("--configs: 'h2o_0_0_64': its recent part is 0"), std::string::npos);
  for (const char* capacity : {"16777217", "99999999999"}) {
    const std::string err = said(eval + "--configs h2o_8_32_" + capacity);
    EXPECT_NE(err.find(std::string("its capacity '") + capacity + "' is not a whole number from 0 to 16777216"), std::string::npos) << err;
    EXPECT_EQ(err.find("--budget"), std::string::npos) << err;
  }
  EXPECT_FALSE(fs::exists(dir / "run")) << "a refused run left its folder";
}

// Reliability round 4 (scale): eval --text encodes only as far as the tokens
// it scores. A 5 MB text at --max-tokens 200 was tokenized whole first (the
// progress line's last state, "5.x of 5.x MB", said so); now it stops in the
// first part, with the same scores as the first part of the text alone.
TEST(CliEval, ALongTextIsEncodedOnlyAsFarAsTheTokensScored) {
  H2O_REQUIRE_ASSET("kjv-1M.bin");
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  H2O_REQUIRE_ASSET("kjv-valid.txt");
  const fs::path dir = temp_dir("eval-long-text");
  std::ifstream in(asset("kjv-valid.txt"), std::ios::binary);
  const std::string one((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  {
    std::ofstream out(dir / "long.txt", std::ios::binary);
    for (size_t written = 0; written < (size_t(5) << 20); written += one.size()) out << one;
  }
  const std::string base = "eval --model " + asset("kjv-1M.bin") + " --tokenizer " + asset("kjv-tok2k.model") +
                           " --policies h2o --budgets 64 --max-tokens 200 --text ";
  const CliResult r = run_cli(base + (dir / "long.txt").string() + " --out " + (dir / "long").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("tokenizing"), std::string::npos) << "the whole text was tokenized: " << r.err;
  const CliResult alone = run_cli(base + asset("kjv-valid.txt") + " --out " + (dir / "alone").string());
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const auto long_rows = read_csv(dir / "long" / "eval.csv"), alone_rows = read_csv(dir / "alone" / "eval.csv");
  ASSERT_EQ(long_rows.size(), alone_rows.size());
  for (const char* name : {"tokens", "policy", "perplexity", "top1_agreement", "mean_kl_vs_full"}) {
    const int c = column(long_rows[0], name);
    for (size_t r = 1; r < long_rows.size(); ++r) EXPECT_EQ(long_rows[r][c], alone_rows[r][c]) << name << ", row " << r;
  }
}

TEST(CliEval, SampledIdsThenTable) {
  const fs::path dir = temp_dir("eval");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 300, 3));
  const CliResult e = run_cli("eval --model synthetic:stories260K --ids " + (dir / "ids.txt").string() +
                              " --budgets 16,32 --out " + (dir / "run").string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto rows = read_csv(dir / "run" / "eval.csv");
  ASSERT_EQ(rows.size(), 6u);  // header, full, 2 budgets x 2 policies
  EXPECT_EQ(rows[1][column(rows[0], "top1_agreement")], "1");
  EXPECT_EQ(rows[1][column(rows[0], "mean_kl_vs_full")], "0");
  const int kv = column(rows[0], "peak_kv_live_bytes");
  for (size_t i = 2; i < rows.size(); ++i) {
    EXPECT_GT(std::stod(rows[i][column(rows[0], "mean_kl_vs_full")]), 0.0);
    EXPECT_EQ(std::stoi(rows[i][column(rows[0], "tokens")]), 299);
    // 300 tokens, past every budget: a bounded cache peaks below the full one.
    EXPECT_LT(std::stoll(rows[i][kv]), std::stoll(rows[1][kv])) << rows[i][column(rows[0], "policy")];
  }
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_GT(std::stod(rows[i][column(rows[0], "tokens_per_s")]), 0.0);
    EXPECT_GE(std::stoll(rows[i][column(rows[0], "peak_kv_allocated_bytes")]), std::stoll(rows[i][kv]));
    EXPECT_GT(std::stoll(rows[i][column(rows[0], "process_peak_rss_bytes")]), std::stoll(rows[1][kv]));
  }
  EXPECT_NE(e.out.find("| tokens/s | peak KV |"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("Process peak RSS"), std::string::npos) << e.out;
  EXPECT_TRUE(fs::exists(dir / "run" / "tokens.csv"));
}

TEST(CliEval, RatiosAreFractionsOfTheScoredTokens) {
  const fs::path dir = temp_dir("eval-ratios");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 201, 5));
  const CliResult e = run_cli("eval --model synthetic:stories260K --ids " + (dir / "ids.txt").string() +
                              " --policies streaming,h2o --ratios 0.1,0.25 --heavy-ratio 0.1 --recent-ratio 0.05 --out " +
                              (dir / "run").string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto rows = read_csv(dir / "run" / "eval.csv");
  // full, 2 ratios x 2 policies, H2O by its two ratios; --budgets' default list is not run beside ratios.
  ASSERT_EQ(rows.size(), 7u);
  const int budget = column(rows[0], "budget"), ratio = column(rows[0], "sized_by"), policy = column(rows[0], "policy");
  // 200 scored tokens: floor(0.1 * 200) = 20, floor(0.25 * 200) = 50.
  EXPECT_EQ(rows[2][budget], "20");
  EXPECT_EQ(rows[2][ratio], "0.1");
  EXPECT_EQ(rows[5][budget], "50");
  EXPECT_EQ(rows[6][policy], "h2o(sinks=0,heavy=20,recent=10)");
  EXPECT_EQ(rows[6][ratio], "heavy 0.1, recent 0.05");
}

TEST(CliEval, TheSeedsConfigurationNames) {
  const fs::path dir = temp_dir("eval-configs");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 120, 5));
  const CliResult e = run_cli("eval --model synthetic:stories260K --ids " + (dir / "ids.txt").string() +
                              " --configs baseline,streaming_4_32,h2o_4_8_32 --out " + (dir / "run").string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto rows = read_csv(dir / "run" / "eval.csv");
  ASSERT_EQ(rows.size(), 4u);  // header, baseline (the full cache), the two configurations
  const int sized_by = column(rows[0], "sized_by"), policy = column(rows[0], "policy");
  EXPECT_EQ(rows[1][sized_by], "baseline");
  EXPECT_EQ(rows[1][policy], "full");
  EXPECT_EQ(rows[2][policy], "streaming(sinks=4,window=28)");
  EXPECT_EQ(rows[3][policy], "h2o(sinks=4,heavy=20,recent=8)");
  EXPECT_EQ(rows[3][sized_by], "h2o_4_8_32");
  expect_one_line_error(run_cli("eval --model synthetic:stories260K --ids " + (dir / "ids.txt").string() +
                                " --configs h2o_8_256 --out " + (dir / "bad").string()),
                        "--configs: 'h2o_8_256' is not a configuration name");
}

std::string file_start(const fs::path& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string start(bytes, '\0');
  in.read(start.data(), std::streamsize(bytes));
  return start.substr(0, size_t(in.gcount()));
}

TEST(CliEval, LengthsStressTestWritesTableCsvAndPlot) {
  const fs::path dir = temp_dir("eval-lengths");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 200, 5));
  const CliResult e = run_cli("eval --model synthetic:stories260K --ids " + (dir / "ids.txt").string() +
                              " --configs baseline,streaming_4_32,h2o_4_8_32 --lengths 50,200 --out " +
                              (dir / "run").string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  // The whole run is the longest length: eval's own table scores its 199 predictions.
  EXPECT_EQ(read_csv(dir / "run" / "eval.csv")[1][1], "199");
  const auto rows = read_csv(dir / "run" / "lengths.csv");
  ASSERT_EQ(rows.size(), 7u);  // header, 3 configurations x 2 lengths
  const auto& h = rows[0];
  EXPECT_EQ(rows[1][column(h, "sized_by")], "baseline");
  EXPECT_EQ(rows[1][column(h, "length")], "50");
  EXPECT_EQ(rows[1][column(h, "scored")], "49");
  EXPECT_EQ(rows[2][column(h, "length")], "200");
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_GT(std::stod(rows[i][column(h, "perplexity")]), 1.0);
    EXPECT_GT(std::stod(rows[i][column(h, "tokens_per_s")]), 0.0);
    const std::string verdict = rows[i][column(h, "verdict")];
    EXPECT_TRUE(verdict == "stable" || verdict == "broken past the trained context") << verdict;
  }
  // At 200 tokens the 32-token caches hold less than the full one.
  const int kv = column(h, "peak_kv_live_bytes");
  EXPECT_LT(std::stoll(rows[4][kv]), std::stoll(rows[2][kv]));
  EXPECT_NE(e.out.find("| policy | N = 50 | N = 200 | peak KV at N = 200 | verdict |"), std::string::npos) << e.out;
#ifdef H2O_WITH_PLOT
  EXPECT_EQ(file_start(dir / "run" / "lengths.png", 8), "\x89PNG\r\n\x1a\n");
  EXPECT_EQ(file_start(dir / "run" / "lengths.pdf", 4), "%PDF");
#else
  GTEST_SKIP() << "built without cairo: no plot";
#endif
}

TEST(CliEval, BadLengths) {
  const fs::path dir = temp_dir("eval-bad-lengths");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 40, 5));
  const std::string base =
      "eval --model synthetic:stories260K --ids " + (dir / "ids.txt").string() + " --out " + (dir / "run").string();
  expect_one_line_error(run_cli(base + " --lengths 0"), "--lengths: length 0 is below 2");
  expect_one_line_error(run_cli(base + " --lengths 10,-5"), "--lengths: length -5 is below 2");
  expect_one_line_error(run_cli(base + " --lengths 10,x"), "--lengths: 'x' is not a length");
  expect_one_line_error(run_cli(base + " --lengths 20,10"), "--lengths: lengths must increase");
  expect_one_line_error(run_cli(base + " --lengths 99999999"), "--lengths: length 99999999 is above 16777216");
  expect_one_line_error(run_cli(base + " --lengths 10,50"), "--lengths: length 50 is more than the 40 tokens");
  expect_one_line_error(run_cli(base + " --lengths 10 --ratios 0.5"), "--lengths: not with --ratios");
  expect_one_line_error(run_cli(base + " --lengths 10 --max-tokens 20"), "--lengths: give it or --max-tokens");
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST(CliGenerate, RatiosAreFractionsOfThePrompt) {
  // 10 prompt ids: floor(0.3 * 10) = 3 heavy, max(1, floor(0.05 * 10)) = 1 recent, no sinks.
  const CliResult r = run_cli("generate --model synthetic:stories260K --prompt-ids 1,2,3,4,5,6,7,8,9,10 "
                              "--max-new-tokens 2 --policy h2o --heavy-ratio 0.3 --recent-ratio 0.05");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("policy: h2o(sinks=0,heavy=3,recent=1) (from 10 prompt tokens)"), std::string::npos) << r.err;
  const std::string base = "generate --model synthetic:stories260K --prompt-ids 1,2,3 --max-new-tokens 2 ";
  expect_one_line_error(run_cli(base + "--heavy-ratio 0"), "--heavy-ratio: must be a fraction");
  expect_one_line_error(run_cli(base + "--budget-ratio 0.1"), "--budget-ratio: 0.1 of 3 tokens");
  expect_one_line_error(run_cli(base + "--policy streaming --recent-ratio 0.5"), "--recent-ratio: the streaming");
  expect_one_line_error(run_cli("stream --model synthetic:stories260K --budget-ratio 0.5"),
                        "--budget-ratio: stream has no input length");
}

// `info` on a GPT-NeoX shape: its block, and every parameter counted, the
// separate classifier's too (Pythia-70M's real count).
TEST(CliInfo, GptNeoxBlockAndTheWholeParameterCount) {
  const CliResult r = run_cli("info --model synthetic:pythia-70m");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gptneox"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LayerNorm, GELU MLP, output biases, parallel residual, RoPE on 16 of 64 head dims"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("parameters  70426624\n"), std::string::npos) << r.out;
}

TEST(CliErrors, MissingModelFile) {
  expect_one_line_error(run_cli("info --model /no/such/model.bin"), "/no/such/model.bin");
}

TEST(CliErrors, TruncatedCheckpoint) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  const fs::path dir = temp_dir("trunc");
  std::ifstream in(asset("stories260K.bin"), std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir / "cut.bin", std::ios::binary).write(data.data(), std::streamsize(data.size() / 2));
  expect_one_line_error(run_cli("info --model " + (dir / "cut.bin").string()), "cut.bin");
}

TEST(CliErrors, WrongTokenizerForModel) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  H2O_REQUIRE_ASSET("stories260K.bin");
  expect_one_line_error(
      run_cli("info --model " + asset("stories260K.bin") + " --tokenizer " + asset("tokenizer.model")),
      "tokenizer.model");
}

TEST(CliErrors, BudgetsAndFlags) {
  const std::string base = "generate --model synthetic:stories260K --prompt-ids 1 --max-new-tokens 2 ";
  expect_one_line_error(run_cli(base + "--policy h2o --budget 0"), "--budget");
  expect_one_line_error(run_cli(base + "--policy streaming --budget 4 --sinks 4"), "--sinks");
  expect_one_line_error(run_cli(base + "--policy streaming --window 0"), "--window");
  expect_one_line_error(run_cli(base + "--threads -1"), "--threads");
  expect_one_line_error(run_cli("generate --model synthetic:stories260K --prompt-ids 1 --max-new-tokens 0"),
                        "--max-new-tokens");
  expect_one_line_error(run_cli(base + "--policy lru"), "--policy");
  expect_one_line_error(run_cli(base + "--backend tpu"), "--backend");
  expect_one_line_error(run_cli("generate --model synthetic:stories260K --prompt-ids 1,99999"), "--prompt-ids");
}

TEST(CliErrors, MalformedPromptsLeaveNoLogs) {
  const fs::path dir = temp_dir("badjsonl");
  std::ofstream(dir / "q.jsonl") << "{\"question_id\": 1, \"turns\": [\"hi\"]}\n{\"question_id\": 2, \"turns\": 7}\n";
  const fs::path out = dir / "logs";
  expect_one_line_error(run_cli("stream --model synthetic:stories260K --prompts " + (dir / "q.jsonl").string() +
                                " --out " + out.string()),
                        "q.jsonl:2");
  EXPECT_FALSE(fs::exists(out));
}

// KV precision (SEMANTICS.md): eval sweeps --kv-sweep with a KV column; fewer
// bits hold fewer bytes; a pane list names a precision per entry.
TEST(CliKvPrecision, EvalSweepsBitsAndFewerBitsHoldFewerBytes) {
  const fs::path dir = temp_dir("eval-kv");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 200, 5));
  const CliResult e = run_cli("eval --model synthetic:test-256 --ids " + (dir / "ids.txt").string() +
                              " --policies h2o --budgets 96 --kv-sweep 32,16,4,2 --out " + (dir / "run").string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto rows = read_csv(dir / "run" / "eval.csv");
  ASSERT_EQ(rows.size(), 9u);  // header, full f32, h2o f32, then full and h2o at 16, 4 and 2 bits
  const int kv = column(rows[0], "kv_precision"), bytes = column(rows[0], "peak_kv_live_bytes");
  const int ppl = column(rows[0], "perplexity");
  EXPECT_EQ(rows[1][kv], "f32");
  EXPECT_EQ(rows[3][kv], "16bit");
  EXPECT_EQ(rows[3][column(rows[0], "policy")], "full(kv=16bit)");
  EXPECT_EQ(rows[7][kv], "2bit");
  // The full cache: f16 holds half of f32; 4 and 2 bits less again (the residual stays f16).
  EXPECT_EQ(std::stoll(rows[3][bytes]) * 2, std::stoll(rows[1][bytes]));
  EXPECT_LT(std::stoll(rows[5][bytes]), std::stoll(rows[3][bytes]));
  EXPECT_LT(std::stoll(rows[7][bytes]), std::stoll(rows[5][bytes]));
  // f16 is nearly exact; 2 bits moves the perplexity.
  EXPECT_NEAR(std::stod(rows[3][ppl]), std::stod(rows[1][ppl]), 1e-3 * std::stod(rows[1][ppl]));
  EXPECT_NE(rows[7][ppl], rows[1][ppl]);
  EXPECT_NE(e.out.find("| policy | budget | KV |"), std::string::npos) << e.out;
}

// Reliability round 4: "full@2bit" in eval's list is a row of its own (it was
// dropped with exit 0), and parts given (--recent) hold at every budget of the
// sweep, as --configs holds them (the sweep split the whole budget instead).
TEST(CliKvPrecision, EvalKeepsFullAtItsOwnBitsAndThePartsGivenAtEveryBudget) {
  const fs::path dir = temp_dir("eval-own-bits");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 160, 5));
  const std::string ids = " --model synthetic:test-256 --ids " + (dir / "ids.txt").string();
  const CliResult e = run_cli("eval" + ids + " --policies full@2bit,h2o --sinks 2 --recent 20 --budgets 48,96 --out " +
                              (dir / "run").string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto rows = read_csv(dir / "run" / "eval.csv");
  ASSERT_EQ(rows.size(), 5u);  // header, full f32, full at 2 bits, h2o at 48 and at 96
  const int policy = column(rows[0], "policy");
  EXPECT_EQ(rows[2][policy].rfind("full(kv=2bit", 0), 0u) << rows[2][policy];
  EXPECT_EQ(rows[3][policy], "h2o(sinks=2,heavy=26,recent=20)");
  EXPECT_EQ(rows[4][policy], "h2o(sinks=2,heavy=74,recent=20)");
  // A budget too small for the parts given is one line naming it.
  const CliResult small = run_cli("eval" + ids + " --policies h2o --sinks 2 --recent 40 --budgets 96,32");
  EXPECT_NE(small.exit_code, 0);
  EXPECT_NE(small.err.find("--budgets: budget 32"), std::string::npos) << small.err;
  EXPECT_EQ(std::count(small.err.begin(), small.err.end(), '\n'), 1) << small.err;
  // --kv-sweep 32 alone keeps the backend's type: a group beside it changes nothing (it was accepted).
  const CliResult g = run_cli("eval" + ids + " --policies h2o --budgets 96 --kv-sweep 32 --kv-group 64 --kv-residual 64");
  EXPECT_NE(g.exit_code, 0);
  EXPECT_NE(g.err.find("--kv-group: give --kv-bits 16, 8, 4 or 2"), std::string::npos) << g.err;
}

// --kv-group / --kv-residual beside "name@bits" set that pane's G and R (they
// were refused as "alone it changes nothing"); with no bits anywhere they are.
TEST(CliKvPrecision, GroupAndResidualGoToAPaneNamedWithItsOwnBits) {
  const fs::path dir = temp_dir("stream-own-group");
  const std::string base = "stream --model synthetic:test-256 --quiet --questions 1 --max-new-tokens 8 --budget 96 ";
  const CliResult r = run_cli(base + "--policies full,h2o@2bit --kv-group 16 --kv-residual 16 --out " + (dir / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("kv=2bit,kv_group=16,kv_residual=16"), std::string::npos) << r.err;
  const CliResult alone = run_cli(base + "--policies full,h2o --kv-group 16");
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("--kv-group: give --kv-bits 16, 8, 4 or 2"), std::string::npos) << alone.err;
}

// h2o-bench-replay --seek: a step past the recording, a negative one or a
// word is one line naming --seek (it timed a step that does not exist,
// printed "skimmed MiB/s -16999" or only "stoll").
TEST(CliBenchReplay, ASeekPastTheRecordingOrNotAStepIsOneLine) {
  const fs::path dir = temp_dir("bench-replay-seek");
  const std::string recording = " --model synthetic:stories260K --steps 20 --recording " + (dir / "r.jsonl").string();
  const CliResult ok = run_program(H2O_BENCH_REPLAY_PATH, recording + " --seek 5 --repeats 1");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("| 5 |"), std::string::npos) << ok.out;
  // Without --seek, the seeks follow the recording's 20 steps (the defaults 1000 and 3000 were past its end).
  const CliResult defaults = run_program(H2O_BENCH_REPLAY_PATH, recording + " --repeats 1");
  ASSERT_EQ(defaults.exit_code, 0) << defaults.err;
  EXPECT_NE(defaults.out.find("| 6 |"), std::string::npos) << defaults.out;
  EXPECT_NE(defaults.out.find("| 18 |"), std::string::npos) << defaults.out;
  for (const std::string seek : {"5000", "-3", "abc", "20"}) {
    const CliResult r = run_program(H2O_BENCH_REPLAY_PATH, recording + " --seek " + seek + " --repeats 1");
    EXPECT_NE(r.exit_code, 0) << seek;
    EXPECT_NE(r.err.find("--seek"), std::string::npos) << seek << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << seek << ": " << r.err;
    EXPECT_EQ(r.out.find("| " + seek + " |"), std::string::npos) << r.out;
  }
}

// Reliability round 4: "--kv-bits 4,2" is keys 4, values 2 in every command
// (eval and h2o-bench read it as a sweep of 4 and 2 bits); comparing
// precisions is --kv-sweep, and a list given to --kv-bits points there.
TEST(CliKvPrecision, KvBitsFourTwoIsKeysFourValuesTwoEverywhere) {
  const fs::path dir = temp_dir("kv-bits-k4v2");
  ASSERT_NO_FATAL_FAILURE(sample_ids(dir / "ids.txt", 120, 5));
  const std::string ids = " --model synthetic:test-256 --ids " + (dir / "ids.txt").string();
  const CliResult e = run_cli("eval" + ids + " --policies h2o --budgets 96 --kv-bits 4,2 --out " + (dir / "run").string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto rows = read_csv(dir / "run" / "eval.csv");
  ASSERT_EQ(rows.size(), 4u);  // header, full f32, then full and h2o at K4V2
  const int kv = column(rows[0], "kv_precision");
  EXPECT_EQ(rows[2][kv], "k4v2");
  EXPECT_EQ(rows[3][kv], "k4v2");
  const CliResult b = run_program(H2O_BENCH_PATH, "--shapes test-256 --policies h2o --budget 32 --contexts 64 "
                                                  "--tokens 2 --repeats 1 --kv-bits 4,2");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("kv=k4v2,"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("kv=4bit"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("kv=2bit"), std::string::npos) << b.out;
  expect_one_line_error(run_cli("eval" + ids + " --policies h2o --budgets 96 --kv-bits 32,4,2"),
                        "--kv-bits: '32,4,2' is a list: give one precision, K or K,V");
  expect_one_line_error(run_program(H2O_BENCH_PATH, "--kv-bits 16,4,2"), "--kv-bits: '16,4,2' is a list");
  expect_one_line_error(run_cli("eval" + ids + " --kv-bits 4 --kv-sweep 32,4"), "--kv-sweep: give --kv-bits");
  expect_one_line_error(run_program(H2O_BENCH_PATH, "--kv-bits 4 --kv-sweep 32,4"), "--kv-sweep: give --kv-bits");
}

TEST(CliKvPrecision, OnePolicyAtTwoPrecisionsSideBySide) {
  const fs::path dir = temp_dir("stream-kv");
  const CliResult r = run_cli("stream --model synthetic:test-256 --quiet --questions 1 --max-new-tokens 48 "
                              "--policies h2o,h2o@2bit --budget 96 --out " + (dir / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // G and R not given: shaped for the model's head and the budget of 96 (SEMANTICS), and said.
  EXPECT_NE(r.err.find("h2o(sinks=4,heavy=46,recent=46,kv=2bit,kv_group=16,kv_residual=16)"), std::string::npos) << r.err;
  std::ifstream in(dir / "run" / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  ASSERT_EQ(manifest["policies"].size(), 2u);
  EXPECT_FALSE(manifest["policies"][0].contains("kv_bits"));
  EXPECT_EQ(manifest["policies"][1]["kv_bits"], nlohmann::json({2, 2}));
  EXPECT_EQ(manifest["policies"][1]["kv_group"], 16);
  EXPECT_EQ(manifest["policies"][1]["kv_residual"], 16);
}

TEST(CliKvPrecision, BenchRowsPerPrecisionAndTheDeviceTakesIt) {
  const CliResult r = run_program(H2O_BENCH_PATH, "--shapes test-256 --policies h2o --budget 32 --contexts 64 "
                                                  "--tokens 4 --repeats 1 --kv-sweep 32,4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| h2o(sinks=4,heavy=14,recent=14) |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| h2o(sinks=4,heavy=14,recent=14,kv=4bit,kv_group=8,kv_residual=8) |"), std::string::npos) << r.out;
  // G and R are h2o-bench's flags too (its error for a head G does not divide named them while it had none).
  const CliResult g = run_program(H2O_BENCH_PATH, "--shapes test-256 --policies h2o --budget 32 --contexts 64 "
                                                  "--tokens 2 --repeats 1 --kv-bits 4 --kv-group 16 --kv-residual 16");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("kv=4bit,kv_group=16,kv_residual=16) |"), std::string::npos) << g.out;
  const CliResult none = run_program(H2O_BENCH_PATH, "--kv-sweep ,");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("--kv-sweep: no precision given"), std::string::npos) << none.err;
  // Below 16 bits the device keeps the quantized layout, and picks the CPU's tokens.
  const std::string generate = "generate --model synthetic:test-256 --prompt-ids 1,2,3 --max-new-tokens 6 --print-ids "
                               "--kv-bits 4 --kv-group 16 --kv-residual 16 --backend ";
  const CliResult cpu = run_cli(generate + "cpu"), device = run_cli(generate + "cuda-sim");
  ASSERT_EQ(device.exit_code, 0) << device.err;
  EXPECT_EQ(device.out.substr(0, device.out.find('\n')), cpu.out.substr(0, cpu.out.find('\n')));
  // 16 bits on an f32 device cache: its f16 runs, which keep no pre-RoPE keys for rolling positions.
  expect_one_line_error(run_cli("generate --model synthetic:test-256 --prompt-ids 1 --backend cuda-sim --kv-bits 16 "
                                "--position-rolling"),
                        "--kv-bits: 16bit KV with --position-rolling on the cuda-sim backend needs its f16 cache");
}

// h2o-bench's contexts are whole numbers no larger than a cache may hold, and
// a context this machine's memory cannot hold is refused before any cache is
// filled (it once ran for minutes and took 4 GB before saying anything).
TEST(CliBench, RefusesContextsItCannotHoldBeforeFillingAnyCache) {
  const std::string base = "--shapes stories260K --policies full --tokens 2 --repeats 1 --contexts ";
  expect_one_line_error(run_program(H2O_BENCH_PATH, base + "2000000000"), "--contexts: context 2000000000 is above 16777216");
  expect_one_line_error(run_program(H2O_BENCH_PATH, base + "12abc"), "--contexts: '12abc' is not a context");
  expect_one_line_error(run_program(H2O_BENCH_PATH, base + "0"), "--contexts: context 0 is below 1");
  // stories15M's full f32 cache at 2^24 tokens: 220 GiB.
  const CliResult big = run_program(H2O_BENCH_PATH, "--shapes stories15M --policies full --tokens 2 --repeats 1 --contexts 16777216");
  expect_one_line_error(big, "--contexts: a context of 16777216 tokens (1 cache, 6 layers x 6 KV heads) need");
  EXPECT_NE(big.err.find("more than this machine's"), std::string::npos) << big.err;
  EXPECT_EQ(big.out, "");  // not even the table's header
}

// convert --tokenizer writes the tokenizer's vocabulary into the GGUF: the file then tokenizes (and
// generates) as the model with its tokenizer beside it did; once it was silently left out.
TEST(CliConvert, TheTokenizerGivenGoesIntoTheFile) {
  H2O_REQUIRE_ASSET("kjv-1M.bin");
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  const auto dir = temp_dir("convert-tokenizer");
  const std::string gguf = (dir / "kjv.gguf").string();
  const CliResult c = run_cli("convert --model " + asset("kjv-1M.bin") + " --tokenizer " + asset("kjv-tok2k.model") +
                              " --type f32 --out " + gguf);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string generate = " --prompt 'In the beginning God' --max-new-tokens 8 --print-ids";
  const CliResult with_model = run_cli("generate --model " + asset("kjv-1M.bin") + " --tokenizer " +
                                       asset("kjv-tok2k.model") + generate);
  const CliResult alone = run_cli("generate --model " + gguf + generate);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(alone.out, with_model.out);
  const CliResult both = run_cli("convert --model " + asset("kjv-1M.bin") + " --tokenizer " + asset("kjv-tok2k.model") +
                                 " --vocab " + gguf + " --type f32 --out " + (dir / "x.gguf").string());
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("--tokenizer: give it or --vocab, not both"), std::string::npos) << both.err;
  std::filesystem::remove_all(dir);
}

// Every benchmark program takes its flags as h2o-cli does: a refusal is one line that begins with
// the program's name and names the flag, in the table's words (a word was "not in range", 0x10 and an
// empty list were taken and printed an empty table, an unparsable shape ended in "terminate").
TEST(CliBenchFlags, EveryBenchmarkRefusesABadFlagInOneLineNamingIt) {
  const struct {
    const char* program;
    std::string name, args, says;
  } cases[] = {
      {H2O_BENCH_STUDIO_PATH, "h2o-bench-studio", "--steps abc", "--steps: expected a whole number from 1 to 10000000, got 'abc'"},
      {H2O_BENCH_STUDIO_PATH, "h2o-bench-studio", "--steps 0x10", "--steps: expected a whole number"},
      {H2O_BENCH_STUDIO_PATH, "h2o-bench-studio", "--shapes ''", "--shapes: no shape given"},
      {H2O_BENCH_STUDIO_PATH, "h2o-bench-studio", "--shapes ,", "--shapes: no shape given"},
      {H2O_BENCH_STUDIO_PATH, "h2o-bench-studio", "--panes ''", "--panes: no pane count given"},
      {H2O_BENCH_STUDIO_PATH, "h2o-bench-studio", "--dtype q9", "--dtype: give --backend too"},
      {H2O_BENCH_STUDIO_PATH, "h2o-bench-studio", "--nonsense", "--nonsense"},
      {H2O_BENCH_PATH, "h2o-bench", "--prefill-chunk 0", "--prefill-chunk: expected a whole number from 1 to"},
      {H2O_BENCH_PATH, "h2o-bench", "--tokens 1e3", "--tokens: expected a whole number"},
      {H2O_BENCH_PATH, "h2o-bench", "--shapes ,", "--shapes: no shape given"},
      {H2O_BENCH_QUANT_PATH, "h2o-bench-quant", "--shapes a:abcx3", "--shapes a:abcx3: must be an integer"},
      {H2O_BENCH_QUANT_PATH, "h2o-bench-quant", "--shapes ''", "--shapes: no shape given"},
      {H2O_BENCH_QUANT_PATH, "h2o-bench-quant", "--threads 0", "--threads: thread count 0 is below 1"},
      {H2O_BENCH_QUANT_PATH, "h2o-bench-quant", "--batch 65", "--batch: 65 is more than 64"},
      {H2O_BENCH_REPLAY_PATH, "h2o-bench-replay", "--steps 0x10", "--steps: expected a whole number from 1 to 1000000"},
      {H2O_BENCH_REPLAY_PATH, "h2o-bench-replay", "--repeats -1", "--repeats: expected a whole number from 1 to 100"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name + " " + c.args);
    const CliResult r = run_program(c.program, c.args);
    expect_one_line_error(r, c.says);
    EXPECT_EQ(r.err.rfind(c.name + ": ", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "") << "no table for a refused flag";
  }
}
