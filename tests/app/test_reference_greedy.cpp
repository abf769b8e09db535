// The shared reference outputs (computed with an independent float64
// implementation) reproduced exactly by `h2o-cli generate`, on the CPU
// backend and on the CUDA backend's own code through the SIMT emulation
// (--backend cuda-sim: every kernel, the matvec projections and the graphs
// as a GPU runs them; about ten times the CPU's time at these sizes, a
// minute for all seven cases).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/assets.h"
#include "tests/cli_runner.h"

using namespace h2o::test;

namespace {

std::vector<int> parse_ids(const std::string& s) {
  std::vector<int> ids;
  std::istringstream in(s);
  for (int id; in >> id;) ids.push_back(id);
  return ids;
}

std::string policy_flags(const nlohmann::json& c) {
  const std::string policy = c["policy"];
  std::string flags = " --policy " + policy;
  if (policy == "streaming" || policy == "tova")
    flags += " --sinks " + std::to_string(int(c["sinks"])) + " --window " + std::to_string(int(c["window"]));
  if (policy == "h2o")
    flags += " --sinks " + std::to_string(int(c["sinks"])) + " --heavy " + std::to_string(int(c["heavy"])) +
             " --recent " + std::to_string(int(c["recent"]));
  if (c.value("rolling", false)) flags += " --position-rolling";
  return flags;
}

// --threads is the CPU backend's (cuda-sim emulates the device on one thread and refuses more).
// --slack 0: the references cut back every step, and a device backend's default slack would cut later.
std::string backend_flags(const std::string& backend) {
  std::string flags = " --backend " + backend + " --slack 0";
  if (backend == "cpu") flags += " --threads 2";
  return flags;
}

void check_reference(const std::string& reference, const std::string& model, const std::string& extra) {
  std::ifstream f(asset("reference/" + reference));
  const auto ref = nlohmann::json::parse(f);
  std::string prompt;
  for (int id : ref["prompt_ids"]) prompt += (prompt.empty() ? "" : ",") + std::to_string(id);
  for (const auto& c : ref["cases"]) {
    const int steps = c.contains("steps") ? int(c["steps"]) : int(c["max_new_tokens"]);
    const std::string args = "generate --model " + asset(model) + extra + " --prompt-ids " + prompt +
                             " --max-new-tokens " + std::to_string(steps) + " --prefill-chunk 1 --print-ids" +
                             policy_flags(c);
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    const std::vector<int> expected = c["ids"];
    const std::vector<int> got = parse_ids(r.out);
    ASSERT_EQ(got.size(), expected.size()) << c["policy"];
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_EQ(got[i], expected[i]) << c["policy"] << ": first difference at generated token " << i;
  }
}

// The backend is the parameter: "cpu" or "cuda-sim".
class ReferenceGreedy : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(ReferenceGreedy, Stories260KAllThreePolicies) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  H2O_REQUIRE_ASSET("reference/stories260K-greedy.json");
  check_reference("stories260K-greedy.json", "stories260K.bin", backend_flags(GetParam()));
}

TEST_P(ReferenceGreedy, Stories260KTova) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  H2O_REQUIRE_ASSET("reference/stories260K-tova-greedy.json");
  check_reference("stories260K-tova-greedy.json", "stories260K.bin", backend_flags(GetParam()));
}

TEST_P(ReferenceGreedy, Kjv1MRollingPositionsPastTheContext) {
  H2O_REQUIRE_ASSET("kjv-1M.bin");
  H2O_REQUIRE_ASSET("reference/kjv-1M-greedy.json");
  check_reference("kjv-1M-greedy.json", "kjv-1M.bin",
                  " --tokenizer " + asset("kjv-tok2k.model") + backend_flags(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Backends, ReferenceGreedy, ::testing::Values("cpu", "cuda-sim"),
                         [](const auto& info) { return info.param == "cpu" ? "Cpu" : "CudaSim"; });
