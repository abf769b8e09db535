// h2o-cli tokenize: ids on one line, BOS as the vocabulary asks, any tokenizer file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/assets.h"
#include "tests/cli_runner.h"
#include "tests/text/bpe_writers.h"
#include "core/text/pretokenizer.h"

namespace h2o {
namespace {

using test::run_cli;
namespace fs = std::filesystem;

#define REQUIRE_PCRE2() \
  if (!text::pretokenizer_available()) GTEST_SKIP() << "this build has no PCRE2"

TEST(TokenizeCli, Llama3AddsBosUnlessNoBos) {
  H2O_REQUIRE_ASSET("vocab/ggml-vocab-llama-bpe.gguf");
  REQUIRE_PCRE2();
  const std::string vocab = test::asset("vocab/ggml-vocab-llama-bpe.gguf");
  auto r = run_cli("tokenize --tokenizer " + vocab + " 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "128000 9906 1917\n");
  r = run_cli("tokenize --no-bos --tokenizer " + vocab + " 'Hello world'");
  EXPECT_EQ(r.out, "9906 1917\n");
  // Special tokens are text unless --specials.
  r = run_cli("tokenize --no-bos --tokenizer " + vocab + " '<|eot_id|>'");
  EXPECT_EQ(r.out.find("128009"), std::string::npos) << r.out;
  r = run_cli("tokenize --no-bos --specials --tokenizer " + vocab + " '<|eot_id|>'");
  EXPECT_EQ(r.out, "128009\n");
}

TEST(TokenizeCli, Qwen2AddsNoBos) {
  H2O_REQUIRE_ASSET("vocab/ggml-vocab-qwen2.gguf");
  REQUIRE_PCRE2();
  const auto r = run_cli("tokenize --tokenizer " + test::asset("vocab/ggml-vocab-qwen2.gguf") + " 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "9707 1879\n");
}

TEST(TokenizeCli, SentencePieceModelAndTextFile) {
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
#ifndef H2O_HAVE_SENTENCEPIECE
  GTEST_SKIP() << "this build has no SentencePiece";
#endif
  const fs::path dir = test::temp_dir("tokenize-cli");
  const fs::path text = dir / "text.txt";
  const std::string words = "And God said unto Moses,";
  test::write_file(text, std::vector<uint8_t>(words.begin(), words.end()));
  const auto r = run_cli("tokenize --tokenizer " + test::asset("kjv-tok2k.model") + " --text-file " + text.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 300 393 392 325 684 1991\n");
  fs::remove_all(dir);
}

TEST(TokenizeCli, TokenizerJsonAndEmptyText) {
  REQUIRE_PCRE2();
  const fs::path dir = test::temp_dir("tokenize-cli-json");
  test::write_json(dir / "tokenizer.json", test::tiny_tokenizer_json());
  auto r = run_cli("tokenize --tokenizer " + (dir / "tokenizer.json").string() + " 'hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(test::kTinyBos) + " 259 264\n");
  r = run_cli("tokenize --no-bos --tokenizer " + (dir / "tokenizer.json").string() + " ''");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace h2o
