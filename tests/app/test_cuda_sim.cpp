// --backend cuda-sim end to end: the CUDA backend's own code through the SIMT
// emulation, in h2o-cli and h2o-bench (the shared greedy references run
// through it in test_reference_greedy.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/assets.h"
#include "tests/cli_runner.h"

using namespace h2o::test;

namespace {

void expect_one_line_error(const CliResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace

// The same greedy tokens as the CPU backend (GQA: 8 heads on 4 KV heads):
// a prefill chunk of 10 rows (beyond the matvec kernel's 8: the CPU matmul
// that stands in for cuBLAS), then decode steps on the matvec kernel, from
// graphs, with H2O's cut on the device.
TEST(CliCudaSim, GenerateGivesTheCpuBackendsTokens) {
  const std::string args =
      "generate --model synthetic:stories260K --prompt-ids 1,5,9,14,3,7,30,2,11,4 --prefill-chunk 10 "
      "--max-new-tokens 24 --print-ids --policy h2o --budget 16";
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
