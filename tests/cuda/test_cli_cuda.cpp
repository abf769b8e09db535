// `h2o-cli ... --backend cuda` end to end: without a device, one line and a
// non-zero exit (the app falls back to the CPU itself); with one, the same
// greedy tokens as --backend cpu.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/cli_runner.h"
#include "tests/cuda/cuda_test_support.h"

using namespace h2o::test;

H2O_CUDA_TEST(Cli, GenerateOnTheCudaBackend) {
  const std::string args =
      "generate --model synthetic:stories260K --prompt-ids 1,5,9 --max-new-tokens 24 --print-ids --slack 0";
  const CliResult cuda = run_cli(args + " --backend cuda");
  if (!cuda_device_missing().empty()) {
    EXPECT_NE(cuda.exit_code, 0);
    EXPECT_TRUE(cuda.out.empty()) << cuda.out;
    EXPECT_EQ(std::count(cuda.err.begin(), cuda.err.end(), '\n'), 1) << cuda.err;
    EXPECT_EQ(cuda.err.rfind("h2o-cli: --backend: cuda: no CUDA device found", 0), 0u) << cuda.err;
    return;
  }
  const CliResult cpu = run_cli(args + " --backend cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  ASSERT_EQ(cuda.exit_code, 0) << cuda.err;
  EXPECT_EQ(cuda.out, cpu.out);
}
