// llama.cpp's tokenizer test vectors (shared assets vocab/ggml-vocab-*.gguf
// with *.inp / *.out beside each, generated there with the Hugging Face
// tokenizers): every text must encode to exactly the expected ids, no BOS.
// The Llama-2 vocabulary goes through SentencePiece rebuilt from the GGUF's
// pieces, Llama-3 and Qwen2 through the byte-level BPE tokenizer. Also the
// real vocabularies' special tokens, BOS rules and long texts.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/assets.h"
#include "core/base/error.h"
#include "core/text/pretokenizer.h"
#include "core/text/utf8_stream.h"
#include "core/text/tokenizer.h"

namespace h2o {
namespace {

using test::asset;

struct Case {
  std::string text;
  std::vector<int> ids;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// .inp: texts each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per text.
std::vector<Case> read_cases(const std::string& vocab) {
  const std::string separator = "\n__ggml_vocab_test__\n";
  const std::string inp = read_all(vocab + ".inp");
  std::vector<std::string> texts;
  size_t from = 0;
  for (size_t at; (at = inp.find(separator, from)) != std::string::npos; from = at + separator.size())
    texts.push_back(inp.substr(from, at - from));
  EXPECT_EQ(from, inp.size()) << "text after the last separator in " << vocab << ".inp";

  std::istringstream out(read_all(vocab + ".out"));
  std::vector<Case> cases;
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    Case c;
    c.text = i < texts.size() ? texts[i] : "";
    std::istringstream ids(line);
    for (int id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), texts.size()) << vocab << ": .inp and .out disagree on the number of texts";
  return cases;
}

bool needs_bpe(const std::string& name) { return name != "llama-spm"; }

// Why this build cannot load the vocabulary, or "" if it can. (GTEST_SKIP in
// a helper would only leave the helper, so the tests skip themselves.)
std::string unbuildable(const std::string& name) {
#ifndef H2O_HAVE_SENTENCEPIECE
  if (!needs_bpe(name)) return "this build has no SentencePiece";
#endif
  if (needs_bpe(name) && !text::pretokenizer_available()) return "this build has no PCRE2";
  return "";
}

std::string vocab_asset(const std::string& name) { return "vocab/ggml-vocab-" + name + ".gguf"; }

class VocabConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabConformance, EveryTextEncodesAsExpected) {
  const std::string name = GetParam();
  H2O_REQUIRE_ASSET(vocab_asset(name));
  H2O_REQUIRE_ASSET(vocab_asset(name) + ".inp");
  if (const std::string why = unbuildable(name); !why.empty()) GTEST_SKIP() << why;
  const std::string path = asset(vocab_asset(name));
  const auto tokenizer = load_tokenizer(path);
  const std::vector<Case> cases = read_cases(path);
  ASSERT_GE(cases.size(), 40u);
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = tokenizer->encode(cases[i].text);
    EXPECT_EQ(ids, cases[i].ids) << "text " << i << ": \"" << cases[i].text << "\"";
    passed += ids == cases[i].ids;
  }
  RecordProperty("passed", passed);
  RecordProperty("texts", static_cast<int>(cases.size()));
  std::cout << "[ conformance ] " << name << ": " << passed << " of " << cases.size() << " texts\n";
}

// Byte-level decoding is exact: the pieces of any encoding spell the text.
TEST_P(VocabConformance, PiecesSpellTheTextAgain) {
  const std::string name = GetParam();
  if (!needs_bpe(name)) GTEST_SKIP() << "SentencePiece decoding is checked in test_tokenizer.cpp";
  H2O_REQUIRE_ASSET(vocab_asset(name));
  if (const std::string why = unbuildable(name); !why.empty()) GTEST_SKIP() << why;
  const std::string path = asset(vocab_asset(name));
  const auto tokenizer = load_tokenizer(path);
  for (const Case& c : read_cases(path)) {
    std::string text;
    for (const int id : tokenizer->encode(c.text)) text += tokenizer->piece_text(id, tokenizer->bos_id());
    EXPECT_EQ(text, c.text);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, VocabConformance, ::testing::Values("llama-spm", "llama-bpe", "qwen2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// ---------------------------------------------------------------------------
// The real vocabularies' special tokens and BOS rules.

std::unique_ptr<Tokenizer> real(const std::string& name) {
  const std::string path = asset(vocab_asset(name));
  return load_tokenizer(path);
}

#define REQUIRE_BPE_VOCAB(name)                                                 \
  H2O_REQUIRE_ASSET(vocab_asset(name));                                         \
  if (!text::pretokenizer_available()) GTEST_SKIP() << "this build has no PCRE2"

TEST(RealVocabularies, Llama3SpecialsOnlyInTemplateText) {
  REQUIRE_BPE_VOCAB("llama-bpe");
  const auto tok = real("llama-bpe");
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->bos_id(), 128000);
  EXPECT_EQ(tok->eos_id(), 128001);
  EXPECT_EQ(tok->eot_id(), 128009);  // <|eot_id|>, found by its text: the file names none
  EXPECT_TRUE(tok->adds_bos());      // llama.cpp's default for Llama-3
  EXPECT_EQ(tok->special_id("<|eot_id|>"), 128009);
  EXPECT_EQ(tok->special_id("<|start_header_id|>"), 128006);
  EXPECT_EQ(tok->special_id("hello"), -1);
  const std::string turn = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
  EXPECT_EQ(tok->encode_with_specials(turn), (std::vector<int>{128006, 882, 128007, 271, 13347, 128009}));
  // The same text from a user is text: no id of a special token comes out.
  for (const int id : tok->encode(turn)) EXPECT_LT(id, 128000) << id;
  EXPECT_EQ(tok->piece_text(128009), "");  // control tokens have no surface text
}

TEST(RealVocabularies, Qwen2SpecialsAndNoBos) {
  REQUIRE_BPE_VOCAB("qwen2");
  const auto tok = real("qwen2");
  EXPECT_EQ(tok->vocab_size(), 151936);
  EXPECT_EQ(tok->bos_id(), 151643);
  EXPECT_EQ(tok->eot_id(), 151645);  // <|im_end|>
  EXPECT_FALSE(tok->adds_bos());     // llama.cpp adds none for Qwen2
  const auto ids = tok->encode_with_specials("<|im_start|>user\nHi<|im_end|>\n");
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids[ids.size() - 2], 151645);
  for (const int id : tok->encode("<|im_start|>user")) EXPECT_LT(id, 151643) << id;
  // User-defined pieces ([PAD151646]) print as written.
  EXPECT_EQ(tok->piece_text(151646), "[PAD151646]");
}

TEST(RealVocabularies, SentencePieceFromGgufKnowsItsControlPieces) {
  H2O_REQUIRE_ASSET(vocab_asset("llama-spm"));
#ifndef H2O_HAVE_SENTENCEPIECE
  GTEST_SKIP() << "this build has no SentencePiece";
#else
  const auto tok = real("llama-spm");
  EXPECT_TRUE(tok->adds_bos());
  EXPECT_EQ(tok->special_id("<s>"), 1);
  EXPECT_EQ(tok->special_id("</s>"), 2);
  const auto ids = tok->encode_with_specials("<s>[INST] Hi [/INST]");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_GT(ids[i], 2);
  for (const int id : tok->encode("<s>")) EXPECT_NE(id, 1);
#endif
}

// A 30 KB story text and all MT-Bench prompts: encoded and spelled again byte
// for byte (also what makes a quadratic merge loop show up as a slow suite).
TEST(RealVocabularies, LongTextsRoundTrip) {
  REQUIRE_BPE_VOCAB("llama-bpe");
  H2O_REQUIRE_ASSET("tinystories-valid-sample.txt");
  H2O_REQUIRE_ASSET("mt_bench.jsonl");
  for (const char* name : {"llama-bpe", "qwen2"}) {
    const auto tok = real(name);
    for (const char* file : {"tinystories-valid-sample.txt", "mt_bench.jsonl"}) {
      const std::string text = read_all(asset(file));
      const auto ids = tok->encode(text);
      EXPECT_LT(ids.size(), text.size() / 2) << name << " " << file << ": merges barely applied";
      text::Utf8Stream stream;
      std::string spelled;
      for (const int id : ids) spelled += stream.push(tok->piece_text(id));
      spelled += stream.flush();
      EXPECT_EQ(spelled, text) << name << " " << file;
    }
  }
}

}  // namespace
}  // namespace h2o
