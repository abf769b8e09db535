// Replays every input under tests/data/regressions/<target>/ (inputs that once
// crashed a fuzz target, or found a bug by hand) through the same checks the
// fuzz targets make (tests/fuzz/fuzz_targets.h), in the ordinary suite: each
// must load or fail with an h2o::Error, never crash or throw anything else.
// Run under .ci/sanitize, this also catches memory errors the crash had.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_recording_target.h"
#include "tests/fuzz/fuzz_targets.h"

namespace fs = std::filesystem;

namespace {

using Target = std::function<void(const uint8_t*, size_t)>;

const std::map<std::string, Target>& targets() {
  static const std::map<std::string, Target> all = {
      {"llama2c", h2o::fuzz::run_llama2c},         {"gguf", h2o::fuzz::run_gguf},
      {"safetensors", h2o::fuzz::run_safetensors}, {"sentencepiece", h2o::fuzz::run_sentencepiece},
      {"tokenizer", h2o::fuzz::run_tokenizer},     {"prompts", h2o::fuzz::run_prompts},
      {"token_ids", h2o::fuzz::run_token_ids},     {"recording", h2o::fuzz::run_recording}};
  return all;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void replay(const fs::path& folder, const std::string& target) {
  const fs::path dir = folder / target;
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no inputs in " << dir;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    SCOPED_TRACE(entry.path().string());
    const std::vector<uint8_t> bytes = read_bytes(entry.path());
    EXPECT_NO_THROW(targets().at(target)(bytes.data(), bytes.size()));
    ++count;
  }
  ::testing::Test::RecordProperty("inputs", count);
}

}  // namespace

class FuzzRegressions : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzRegressions, EveryInputLoadsOrFailsWithOneError) { replay(fs::path(H2O_TEST_DATA) / "regressions", GetParam()); }

// The seed corpora too (valid small files of every format), through the same checks.
TEST_P(FuzzRegressions, SeedCorpusReplays) {
  replay(fs::path(H2O_TEST_DATA).parent_path() / "fuzz" / "corpus", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzRegressions,
                         ::testing::Values("llama2c", "gguf", "safetensors", "sentencepiece", "tokenizer", "prompts",
                                           "token_ids", "recording"));
