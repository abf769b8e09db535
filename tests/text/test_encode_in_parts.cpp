// Long texts: encode_in_parts gives exactly encode()'s ids on the real
// vocabularies (cut into many small parts here, so that every kind of cut
// is taken), a text with no place to cut is one part, and a 1 MB word is
// merged in O(n log n) work: its result is checked, not its time.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/assets.h"
#include "tests/text/bpe_writers.h"
#include "core/text/pretokenizer.h"
#include "core/text/tokenizer.h"

namespace h2o {
namespace {

using test::asset;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The test texts of every vocabulary and two assets, as one text of many
// lines, scripts and numbers.
std::string mixed_text() {
  std::string text;
  for (const char* name : {"llama-spm", "llama-bpe", "qwen2", "gpt-2"}) {
    const std::string path = asset("vocab/ggml-vocab-" + std::string(name) + ".gguf.inp");
    if (test::have_asset("vocab/ggml-vocab-" + std::string(name) + ".gguf.inp")) text += read_all(path);
  }
  for (const char* name : {"tinystories-valid-sample.txt", "mt_bench.jsonl"})
    if (test::have_asset(name)) text += read_all(asset(name));
  return text;
}

bool loadable(const std::string& name) {
#ifndef H2O_HAVE_SENTENCEPIECE
  if (name == "llama-spm") return false;
#endif
  return name == "llama-spm" || text::pretokenizer_available();
}

TEST(EncodeInParts, SameIdsAsWholeOnRealVocabularies) {
  H2O_REQUIRE_ASSET("tinystories-valid-sample.txt");
  const std::string text = mixed_text();
  for (const char* name : {"llama-spm", "llama-bpe", "qwen2", "gpt-2"}) {
    const std::string vocab = "vocab/ggml-vocab-" + std::string(name) + ".gguf";
    if (!test::have_asset(vocab) || !loadable(name)) continue;
    const auto tok = load_tokenizer(asset(vocab));
    size_t parts = 0;
    const auto ids = encode_in_parts(*tok, text, [&](size_t, size_t) { ++parts; }, 2048);
    EXPECT_EQ(ids, tok->encode(text)) << name;
    EXPECT_GT(parts, 10u) << name << ": the text was hardly cut, so the cuts were not tested";
  }
}

TEST(EncodeInParts, ProgressReachesTheEnd) {
  const auto tok = make_byte_tokenizer(300);  // knows no cuts: one part
  std::vector<std::pair<size_t, size_t>> seen;
  const auto ids = encode_in_parts(*tok, std::string(5000, 'x'), [&](size_t d, size_t t) { seen.emplace_back(d, t); }, 100);
  EXPECT_EQ(ids.size(), 5000u);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], std::make_pair(size_t(5000), size_t(5000)));
}

TEST(EncodeInParts, SentencePieceFilesAreCutAtSpacesAndGiveTheWholeTextsIds) {
#ifndef H2O_HAVE_SENTENCEPIECE
  GTEST_SKIP() << "this build has no SentencePiece";
#endif
  H2O_REQUIRE_ASSET("tinystories-valid-sample.txt");
  // The Llama-2 tokenizer and the demo's: a word mark only at a piece's start, a dummy prefix; cut
  // between letters (a 47 MB text was one call: 96 s, 4 GB), the ids are the whole text's.
  std::string text = mixed_text();
  if (test::have_asset("kjv-valid.txt")) text += read_all(asset("kjv-valid.txt")).substr(0, 200000);
  for (const char* name : {"tokenizer.model", "kjv-tok2k.model"}) {
    if (!test::have_asset(name)) continue;
    const auto tok = load_tokenizer(asset(name));
    EXPECT_TRUE(tok->next_cut("one two three", 1).has_value()) << name;
    size_t parts = 0;
    const auto ids = encode_in_parts(*tok, text, [&](size_t, size_t) { ++parts; }, 2048);
    EXPECT_EQ(ids, tok->encode(text)) << name;
    EXPECT_GT(parts, 10u) << name << ": the text was hardly cut, so the cuts were not tested";
  }
}

TEST(EncodeInParts, OneMegabyteWordIsBoundedWork) {
  if (!text::pretokenizer_available()) GTEST_SKIP() << "this build has no PCRE2";
  const auto tok = tokenizer_from_vocab(test::tiny_bpe_vocab("llama-bpe"), test::kTinyBos, test::kTinyEos, "tiny.gguf");
  // One word of 2^20 a's: no cut inside, merged by rank to 2^18 "aaaa" pieces.
  const std::string word(size_t(1) << 20, 'a');
  EXPECT_FALSE(tok->next_cut(word, 1000).has_value());
  const auto ids = encode_in_parts(*tok, word, nullptr, 4096);
  ASSERT_EQ(ids.size(), size_t(1) << 18);
  EXPECT_EQ(ids.front(), 268);
  EXPECT_EQ(ids.back(), 268);
}

}  // namespace
}  // namespace h2o
