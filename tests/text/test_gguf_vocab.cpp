// GGUF vocabularies as files: load_gguf_vocab reads vocabulary-only files
// (no tensors) that load_gguf refuses as models; "gpt2" vocabularies carry
// merges, pre-tokenizer, special ids and add_bos_token.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/assets.h"
#include "tests/text/bpe_writers.h"
#include "core/text/pretokenizer.h"
#include "core/text/tokenizer.h"
#include "tests/error_helpers.h"

namespace h2o {
namespace {

using test::error_of;
using test::expect_one_line;
using test::GgufWriter;
using test::kTinyBos;
using test::kTinyEos;

namespace fs = std::filesystem;

class GgufVocabFile : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir("gguf-vocab-file"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const GgufWriter& w, const std::string& name = "vocab.gguf") {
    w.write(dir_ / name);
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(GgufVocabFile, ReadsAGpt2Vocabulary) {
  GgufWriter w = test::tiny_bpe_gguf("qwen2");
  w.set_u32("tokenizer.ggml.eot_token_id", 5);
  w.set_u32("tokenizer.ggml.padding_token_id", 6);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  const GgufVocab v = load_gguf_vocab(write(w));
  EXPECT_EQ(v.vocab.model, "gpt2");
  EXPECT_EQ(v.vocab.pre, "qwen2");
  EXPECT_EQ(v.vocab.pieces, test::tiny_bpe_vocab().pieces);
  EXPECT_EQ(v.vocab.merges, test::tiny_bpe_merges());
  EXPECT_EQ(v.vocab.types[kTinyBos], 3);
  EXPECT_EQ(v.bos_id, kTinyBos);
  EXPECT_EQ(v.eos_id, kTinyEos);
  EXPECT_EQ(v.vocab.eot_id, 5);
  EXPECT_EQ(v.vocab.pad_id, 6);
  ASSERT_TRUE(v.vocab.add_bos.has_value());
  EXPECT_TRUE(*v.vocab.add_bos);
}

TEST_F(GgufVocabFile, AbsentKeysStayAbsent) {
  GgufWriter w = test::tiny_bpe_gguf();
  w.remove("tokenizer.ggml.bos_token_id");
  const GgufVocab v = load_gguf_vocab(write(w));
  EXPECT_EQ(v.bos_id, -1);  // no default for gpt2 vocabularies (SentencePiece's is 1)
  EXPECT_EQ(v.vocab.eot_id, -1);
  EXPECT_FALSE(v.vocab.add_bos.has_value());
  // ...and a tokenizer needs a BOS id.
  if (text::pretokenizer_available())
    expect_one_line(error_of([&] { load_tokenizer((dir_ / "vocab.gguf").string()); }), "vocab.gguf", "BOS id -1");
}

TEST_F(GgufVocabFile, LoadGgufRefusesAVocabularyOnlyFile) {
  const std::string path = write(test::tiny_bpe_gguf());
  expect_one_line(error_of([&] { load_gguf(path); }), path, "only a vocabulary");
  expect_one_line(error_of([&] { load_model(path); }), path, "only a vocabulary");
}

TEST_F(GgufVocabFile, RealVocabularyOnlyFilesAreRefusedAsModels) {
  for (const char* name : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-qwen2.gguf"}) {
    if (!test::have_asset(name)) GTEST_SKIP() << name << " not found";
    expect_one_line(error_of([&] { load_gguf(test::asset(name)); }), test::asset(name), "only a vocabulary");
  }
}

TEST_F(GgufVocabFile, Refusals) {
  {
    GgufWriter w = test::tiny_bpe_gguf();
    w.remove("tokenizer.ggml.model");
    const std::string path = write(w, "novocab.gguf");
    expect_one_line(error_of([&] { load_gguf_vocab(path); }), path, "no tokenizer.ggml.model");
  }
  {
    GgufWriter w = test::tiny_bpe_gguf();
    w.set_array<int32_t>("tokenizer.ggml.merges", test::kGgufI32, {1, 2});
    const std::string path = write(w, "merges-type.gguf");
    expect_one_line(error_of([&] { load_gguf_vocab(path); }), path, "tokenizer.ggml.merges should be an array of string");
  }
  {
    GgufWriter w = test::tiny_bpe_gguf();
    w.set_u32("tokenizer.ggml.eot_token_id", 99999);
    const std::string path = write(w, "eot.gguf");
    expect_one_line(error_of([&] { load_gguf_vocab(path); }), path, "tokenizer.ggml.eot_token_id 99999");
  }
  {
    GgufWriter w = test::tiny_bpe_gguf();
    w.set_u32("tokenizer.ggml.pre", 3);
    const std::string path = write(w, "pre-type.gguf");
    expect_one_line(error_of([&] { load_gguf_vocab(path); }), path, "tokenizer.ggml.pre should be a string");
  }
  {
    GgufWriter w = test::tiny_bpe_gguf();
    w.set_strings("tokenizer.ggml.tokens", {});
    const std::string path = write(w, "empty.gguf");
    expect_one_line(error_of([&] { load_gguf_vocab(path); }), path, "no pieces");
  }
  {
    auto v = test::tiny_bpe_vocab();
    v.merges[0] = "hex";
    const std::string path = write(test::tiny_bpe_gguf(v), "merge.gguf");
    expect_one_line(error_of([&] { load_tokenizer(path); }), path, "tokenizer.ggml.merges[0]");
  }
  {
    const std::string path = write(test::tiny_bpe_gguf("falcon"), "pre.gguf");
    expect_one_line(error_of([&] { load_tokenizer(path); }), path, "\"falcon\" is not a supported pre-tokenizer");
  }
}

TEST_F(GgufVocabFile, AModelGgufWithAGpt2Vocabulary) {
  if (!text::pretokenizer_available()) GTEST_SKIP() << "this build has no PCRE2";
  // The tiny model's tensors with the tiny BPE vocabulary (275 pieces) in place of its own.
  ModelConfig c = test::tiny_config();
  c.vocab_size = 320;
  c.bos_id = kTinyBos;
  c.eos_id = kTinyEos;
  GgufWriter w = test::llama_gguf(test::random_arrays(c, 3, false));
  const auto v = test::tiny_bpe_vocab();
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "llama-bpe");
  w.set_strings("tokenizer.ggml.tokens", v.pieces);
  w.set_strings("tokenizer.ggml.merges", v.merges);
  w.set_array<int32_t>("tokenizer.ggml.token_type", test::kGgufI32, std::vector<int32_t>(v.types.begin(), v.types.end()));
  w.remove("tokenizer.ggml.scores");
  const std::string path = write(w, "model.gguf");
  const auto model = load_gguf(path);
  ASSERT_TRUE(model->vocab.has_value());
  const auto tok = tokenizer_for(*model, "");
  EXPECT_EQ(tok->encode("hello world"), (std::vector<int>{259, 264}));
  EXPECT_EQ(tok->bos_id(), kTinyBos);
  // The same file as --tokenizer: its vocabulary only.
  EXPECT_EQ(load_tokenizer(path)->encode("hello world"), (std::vector<int>{259, 264}));
}

}  // namespace
}  // namespace h2o
