// --backend cuda-sim end to end: the CUDA backend's own code through the SIMT
// emulation, in h2o-cli and h2o-bench (the shared greedy references run
// through it in test_reference_greedy.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/assets.h"
#include "tests/cli_runner.h"

using namespace h2o::test;

namespace {

// The MiB of the `device weights:` line of `h2o-cli info`, or -1 where there is none.
double device_weight_mib(const std::string& out) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("device weights: ", 0) != 0) continue;
    std::istringstream fields(line.substr(16));
    double mib = -1;
    std::string unit;
    fields >> mib >> unit;
    return unit == "MiB" ? mib : -1;
  }
  return -1;
}

void expect_one_line_error(const CliResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace

// info names the emulated device and the weights the backend uploaded: every
// matrix in the precision asked, so f16 takes about half of f32 (norms and
// the RoPE table stay wider).
TEST(CliCudaSim, InfoNamesTheEmulatedDeviceAndItsWeights) {
  const std::string info = "info --model synthetic:stories260K --backend cuda-sim";
  const CliResult f32 = run_cli(info);
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_NE(f32.out.find("backend     cuda-sim SIMT emulation (host memory), f32 weights"), std::string::npos)
      << f32.out;
  const double f32_mib = device_weight_mib(f32.out);
  EXPECT_GT(f32_mib, 0.9) << f32.out;  // 260K parameters of 4 bytes
  EXPECT_LT(f32_mib, 1.1) << f32.out;
  const CliResult f16 = run_cli(info + " --precision f16");
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  const double f16_mib = device_weight_mib(f16.out);
  EXPECT_GT(f16_mib, 0.5 * f32_mib) << f16.out;
  EXPECT_LT(f16_mib, 0.52 * f32_mib) << f16.out;
  // Without --backend, info makes no backend and has no device line.
  const CliResult plain = run_cli("info --model synthetic:stories260K");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(device_weight_mib(plain.out), -1) << plain.out;
}

// The same greedy tokens as the CPU backend (GQA: 8 heads on 4 KV heads):
// a prefill chunk of 10 rows (beyond the matvec kernel's 8: the CPU matmul
// that stands in for cuBLAS), then decode steps on the matvec kernel, from
// graphs, with H2O's cut on the device.
TEST(CliCudaSim, GenerateGivesTheCpuBackendsTokens) {
  const std::string args =
      "generate --model synthetic:stories260K --prompt-ids 1,5,9,14,3,7,30,2,11,4 --prefill-chunk 10 "
      "--max-new-tokens 24 --print-ids --policy h2o --budget 16 --slack 0";
  const CliResult cpu = run_cli(args + " --backend cpu");
  const CliResult sim = run_cli(args + " --backend cuda-sim");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_EQ(sim.out, cpu.out);
  EXPECT_NE(sim.err.find("cuda-sim SIMT emulation"), std::string::npos) << sim.err;
}

TEST(CliCudaSim, BenchPrintsItsRow) {
  const CliResult r = run_program(H2O_BENCH_PATH,
                                  "--backend cuda-sim --shapes stories260K --policies full,h2o --budget 8 --contexts 16 "
                                  "--tokens 4 --repeats 1 --batched");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| cuda-sim | synthetic:stories260K | f32 | 16 | full |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| cuda-sim | synthetic:stories260K | f32 | 16 | full + h2o"), std::string::npos) << r.out;
}

// What the emulation cannot honour is refused with one line naming the flag.
TEST(CliCudaSim, RefusesWhatItCannotHonour) {
  expect_one_line_error(run_cli("generate --model synthetic:stories260K --prompt-ids 1 --backend cuda-sim --threads 4"),
                        "h2o-cli: --threads: cuda-sim emulates the device on one CPU thread");
  expect_one_line_error(run_program(H2O_BENCH_PATH, "--backend cuda-sim --shapes stories260K --op-times"),
                        "h2o-bench: --op-times: cuda-sim runs the kernels on the CPU");
  expect_one_line_error(run_program(H2O_BENCH_PATH, "--backend cuda-sim --shapes stories260K --threads 2"),
                        "h2o-bench: --threads: cuda-sim emulates the device on one CPU thread");
}

// Issue "the app for a talk", round 3: a quantized pane says how many of its
// tokens are codes. Both backends count them alike, step by step, in
// steps.jsonl (kv_quantized_tokens); a policy at the backend's own type has
// no such field.
TEST(CliCudaSim, BothBackendsCountTheQuantizedTokensAlike) {
  std::vector<std::vector<int>> counts;
  for (const std::string backend : {"cpu", "cuda-sim"}) {
    const auto dir = temp_dir("quantized-count-" + backend);
    const CliResult r = run_cli("stream --model synthetic:stories260K --questions 1 --max-new-tokens 24 --quiet "
                                "--policies full,h2o@2bit --budget 48 --slack 0 --backend " + backend + " --out " +
                                (dir / "run").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(dir / "run" / "steps.jsonl");
    std::vector<int> quantized;
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j["policy"].get<std::string>().rfind("full", 0) == 0) {
        EXPECT_FALSE(j.contains("kv_quantized_tokens")) << line;
        continue;
      }
      ASSERT_TRUE(j.contains("kv_quantized_tokens")) << line;
      EXPECT_LE(j["kv_quantized_tokens"].get<int>(), j["cached_tokens"].get<int>()) << line;
      quantized.push_back(j["kv_quantized_tokens"].get<int>());
    }
    ASSERT_FALSE(quantized.empty());
    EXPECT_GT(quantized.back(), 0) << backend;
    counts.push_back(quantized);
  }
  EXPECT_EQ(counts[0], counts[1]);
}
