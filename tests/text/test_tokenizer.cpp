// Tokenizers: SentencePiece files, SentencePiece models rebuilt from an
// embedded (GGUF-style) vocabulary, the byte tokenizer, and tokenizer_for.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/assets.h"
#include "core/base/error.h"
#include "core/model/model.h"
#include "core/text/tokenizer.h"

#ifdef H2O_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace h2o {
namespace {

using test::asset;

// Text as a stream shows it: BOS first, then each piece given the one before.
std::string decode_after_bos(const Tokenizer& tok, const std::vector<int>& ids) {
  std::string text;
  int previous = tok.bos_id();
  for (const int id : ids) {
    text += tok.piece_text(id, previous);
    previous = id;
  }
  return text;
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// The message of the Error that `f` throws; fails the test if it throws none.
template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no h2o::Error thrown";
  return "";
}

void expect_one_line_naming(const std::string& message, const std::string& path) {
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

Model model_with_vocab_size(int vocab_size) {
  Model model;
  model.config.vocab_size = vocab_size;
  model.path = "synthetic:test";
  model.format = "synthetic";
  return model;
}

const std::vector<std::string> kSampleTexts = {
    "Hello world",
    "Once upon a time, there was a little girl named Lily.",
    "And God said unto Moses, I AM THAT I AM.",
    "The quick brown fox jumps over the lazy dog 1234567890!",
    "x = f(y) + 3.14; // a comment",
    "In the beginning God created the heaven and the earth.",
};

// ---------------------------------------------------------------------------
// Byte tokenizer (always built).

TEST(TokenizerBytes, RoundTripsAnyText) {
  const auto tok = make_byte_tokenizer(512);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  const std::string text = " Leading space, caf\xC3\xA9 and \xF0\x9F\x98\x80\n\t\x01\xFF";
  const auto ids = tok->encode(text);
  ASSERT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[0], 3 + ' ');
  EXPECT_EQ(ids.back(), 3 + 255);
  EXPECT_EQ(decode_after_bos(*tok, ids), text);  // no space is dropped after BOS
}

TEST(TokenizerBytes, SpecialAndExtraIds) {
  const auto tok = make_byte_tokenizer(32000);
  EXPECT_EQ(tok->piece_text(1), "");
  EXPECT_EQ(tok->piece_text(2), "");
  EXPECT_EQ(tok->piece_text(300), "<300>");
  EXPECT_TRUE(tok->encode("").empty());
}

TEST(TokenizerBytes, SmallVocabularyFoldsBytes) {
  const auto tok = make_byte_tokenizer(100);  // 97 ids for bytes
  for (const int id : tok->encode("any text \xFF")) {
    EXPECT_GE(id, 3);
    EXPECT_LT(id, 100);
  }
  EXPECT_EQ(tok->encode("a")[0], 3 + 'a' % 97);
  EXPECT_THROW(make_byte_tokenizer(3), Error);
}

TEST(TokenizerFor, ByteTokenizerWithoutFileOrVocab) {
  const Model model = model_with_vocab_size(512);
  const auto tok = tokenizer_for(model, "");
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(decode_after_bos(*tok, tok->encode("hi there")), "hi there");
}

#ifdef H2O_HAVE_SENTENCEPIECE

// ---------------------------------------------------------------------------
// SentencePiece files.

TEST(TokenizerSentencePiece, LoadsLlamaTokenizer) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  const auto tok = load_sentencepiece(asset("tokenizer.model"));
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_NE(tok->describe().find("32000 pieces"), std::string::npos) << tok->describe();
  EXPECT_EQ(tok->piece_text(1), "");  // control pieces have no text
  EXPECT_EQ(tok->piece_text(2), "");
  EXPECT_EQ(tok->piece_text(3 + 'A'), "A");  // <0x41>
  EXPECT_EQ(tok->piece_text(40000), "<40000>");
}

TEST(TokenizerSentencePiece, RoundTripsEnglish) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  const auto tok = load_sentencepiece(asset("tokenizer.model"));
  for (const auto& text : kSampleTexts) {
    const auto ids = tok->encode(text);
    ASSERT_FALSE(ids.empty());
    EXPECT_NE(ids.front(), tok->bos_id()) << "encode must not add BOS";
    EXPECT_EQ(decode_after_bos(*tok, ids), text);
  }
}

TEST(TokenizerSentencePiece, WordsStartWithSpaceExceptAfterBos) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  const auto tok = load_sentencepiece(asset("tokenizer.model"));
  const auto ids = tok->encode("Hello");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(tok->piece_text(ids[0], tok->bos_id()), "Hello");
  EXPECT_EQ(tok->piece_text(ids[0], 100), " Hello");
}

TEST(TokenizerSentencePiece, RoundTripsNonAsciiThroughByteFallback) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  const auto tok = load_sentencepiece(asset("tokenizer.model"));
  // An emoji and rare CJK characters are not pieces: they fall back to bytes.
  const std::string text = "Gr\xC3\xBC\xC3\x9F" "e \xF0\x9F\x98\x80 \xE9\xBE\x98\xE9\xBD\x89 caf\xC3\xA9";
  const auto ids = tok->encode(text);
  bool used_bytes = false;
  for (const int id : ids) used_bytes = used_bytes || (id >= 3 && id < 3 + 256);
  EXPECT_TRUE(used_bytes);
  EXPECT_EQ(decode_after_bos(*tok, ids), text);
}

TEST(TokenizerSentencePiece, KnownKjvEncoding) {
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  const auto tok = load_sentencepiece(asset("kjv-tok2k.model"));
  EXPECT_EQ(tok->vocab_size(), 2048);
  EXPECT_EQ(tok->encode("And God said unto Moses,"), (std::vector<int>{300, 393, 392, 325, 684, 1991}));
  const std::string cjk = "\xE4\xBD\xA0\xE5\xA5\xBD";  // two CJK characters, bytes only in this vocabulary
  EXPECT_EQ(decode_after_bos(*tok, tok->encode("Amen. " + cjk)), "Amen. " + cjk);
}

// ---------------------------------------------------------------------------
// Embedded vocabularies: rebuilt from a file's pieces, they must encode as the
// file does.

EmbeddedVocab vocab_of(const std::string& path, bool with_types = true) {
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.Load(path);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EmbeddedVocab vocab;
  vocab.model = "llama";
  vocab.unk_id = sp.unk_id();
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    vocab.pieces.push_back(sp.IdToPiece(id));
    vocab.scores.push_back(sp.GetScore(id));
    if (!with_types) continue;
    int type = 1;
    if (sp.IsUnknown(id)) type = 2;
    else if (sp.IsControl(id)) type = 3;
    else if (sp.IsUnused(id)) type = 5;
    else if (sp.IsByte(id)) type = 6;
    vocab.types.push_back(type);
  }
  return vocab;
}

void expect_same_encodings(const Tokenizer& rebuilt, const Tokenizer& file) {
  EXPECT_EQ(rebuilt.vocab_size(), file.vocab_size());
  const std::string non_ascii = "caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xBD\xA0\xE5\xA5\xBD";
  auto texts = kSampleTexts;
  texts.push_back(non_ascii);
  for (const auto& text : texts) {
    const auto ids = rebuilt.encode(text);
    EXPECT_EQ(ids, file.encode(text)) << text;
    EXPECT_EQ(decode_after_bos(rebuilt, ids), text);
  }
}

TEST(TokenizerFromVocab, EncodesAsLlamaTokenizerFile) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  const auto file = load_sentencepiece(asset("tokenizer.model"));
  const auto rebuilt = tokenizer_from_vocab(vocab_of(asset("tokenizer.model")), 1, 2, "llama.gguf");
  EXPECT_EQ(rebuilt->bos_id(), 1);
  EXPECT_EQ(rebuilt->eos_id(), 2);
  EXPECT_NE(rebuilt->describe().find("llama.gguf"), std::string::npos);
  expect_same_encodings(*rebuilt, *file);
}

TEST(TokenizerFromVocab, EncodesAsKjvTokenizerFile) {
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  const auto file = load_sentencepiece(asset("kjv-tok2k.model"));
  const auto rebuilt = tokenizer_from_vocab(vocab_of(asset("kjv-tok2k.model")), 1, 2, "kjv.gguf");
  // The file normalises (NFKC, extra spaces); the samples need neither.
  expect_same_encodings(*rebuilt, *file);
}

TEST(TokenizerFromVocab, InfersPieceTypesWhenAbsent) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  const auto file = load_sentencepiece(asset("tokenizer.model"));
  const auto rebuilt = tokenizer_from_vocab(vocab_of(asset("tokenizer.model"), false), 1, 2, "llama.gguf");
  expect_same_encodings(*rebuilt, *file);
}

TEST(TokenizerFromVocab, RejectsBadVocabularies) {
  EmbeddedVocab vocab;
  vocab.model = "llama";
  expect_one_line_naming(error_message([&] { tokenizer_from_vocab(vocab, 1, 2, "empty.gguf"); }), "empty.gguf");

  vocab.pieces = {"<unk>", "<s>", "</s>", "a"};
  vocab.scores = {0, 0, 0};
  expect_one_line_naming(error_message([&] { tokenizer_from_vocab(vocab, 1, 2, "scores.gguf"); }), "scores.gguf");

  vocab.scores.push_back(0);
  expect_one_line_naming(error_message([&] { tokenizer_from_vocab(vocab, 9, 2, "bos.gguf"); }), "bos.gguf");

  vocab.model = "gpt2";
  expect_one_line_naming(error_message([&] { tokenizer_from_vocab(vocab, 1, 2, "gpt2.gguf"); }), "gpt2.gguf");
}

// ---------------------------------------------------------------------------
// Files that are not SentencePiece models.

TEST(TokenizerErrors, MissingFile) {
  const std::string path = (test::temp_dir("tok-missing") / "nope.model").string();
  expect_one_line_naming(error_message([&] { load_sentencepiece(path); }), path);
}

TEST(TokenizerErrors, EmptyFile) {
  const auto path = test::temp_dir("tok-empty") / "empty.model";
  write_file(path, "");
  const std::string message = error_message([&] { load_sentencepiece(path.string()); });
  expect_one_line_naming(message, path.string());
  EXPECT_NE(message.find("not a SentencePiece model"), std::string::npos) << message;
}

TEST(TokenizerErrors, RandomBytes) {
  std::mt19937 rng(42);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  const auto path = test::temp_dir("tok-random") / "random.model";
  write_file(path, bytes);
  const std::string message = error_message([&] { load_sentencepiece(path.string()); });
  expect_one_line_naming(message, path.string());
  EXPECT_NE(message.find("not a SentencePiece model"), std::string::npos) << message;
}

TEST(TokenizerErrors, Llama2cCheckpoint) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  const std::string path = asset("stories260K.bin");
  const std::string message = error_message([&] { load_sentencepiece(path); });
  expect_one_line_naming(message, path);
  EXPECT_NE(message.find("not a SentencePiece model"), std::string::npos) << message;
}

TEST(TokenizerErrors, Folder) {
  const std::string path = test::temp_dir("tok-folder").string();
  expect_one_line_naming(error_message([&] { load_sentencepiece(path); }), path);
}

// ---------------------------------------------------------------------------
// tokenizer_for: file, else embedded vocabulary, checked against the model.

TEST(TokenizerFor, RejectsTokenizerLargerThanModel) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  const Model model = model_with_vocab_size(512);
  const std::string path = asset("tokenizer.model");
  const std::string message = error_message([&] { tokenizer_for(model, path); });
  expect_one_line_naming(message, path);
  EXPECT_NE(message.find("32000"), std::string::npos) << message;
  EXPECT_NE(message.find("512"), std::string::npos) << message;
}

TEST(TokenizerFor, LoadsGivenFile) {
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  const Model model = model_with_vocab_size(2048);
  const auto tok = tokenizer_for(model, asset("kjv-tok2k.model"));
  EXPECT_EQ(tok->encode("And God said unto Moses,"), (std::vector<int>{300, 393, 392, 325, 684, 1991}));
}

TEST(TokenizerFor, UsesEmbeddedVocabulary) {
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  Model model = model_with_vocab_size(2048);
  model.path = "kjv.gguf";
  model.vocab = vocab_of(asset("kjv-tok2k.model"));
  const auto tok = tokenizer_for(model, "");
  EXPECT_EQ(tok->encode("And God said unto Moses,"), (std::vector<int>{300, 393, 392, 325, 684, 1991}));

  model.config.vocab_size = 1024;  // a vocabulary that does not fit the model
  expect_one_line_naming(error_message([&] { tokenizer_for(model, ""); }), "kjv.gguf");
}

#else  // !H2O_HAVE_SENTENCEPIECE

TEST(TokenizerSentencePiece, UnavailableInThisBuild) {
  const std::string message = error_message([] { load_sentencepiece("tokenizer.model"); });
  expect_one_line_naming(message, "tokenizer.model");
  EXPECT_NE(message.find("no SentencePiece support"), std::string::npos) << message;
}

#endif

// A trained model with no tokenizer at all (a llama2.c .bin, none given) is said in one line naming it;
// a tokenizer given, a synthetic model, or a vocabulary of bytes alone says nothing.
TEST(TokenizerFor, ATrainedModelWithNoTokenizerIsSaid) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  H2O_REQUIRE_ASSET("tokenizer.model");
  const auto model = load_model(asset("stories260K.bin"));
  const std::string said = no_tokenizer_warning(*model, "");
  EXPECT_EQ(said.find(asset("stories260K.bin") + " has no tokenizer of its own"), 0u) << said;
  EXPECT_NE(said.find("the other 253 as <id>"), std::string::npos) << said;  // 512 ids, 259 of them bytes and specials
  EXPECT_EQ(no_tokenizer_warning(*model, asset("tokenizer.model")), "");
  EXPECT_EQ(no_tokenizer_warning(*load_model("synthetic:stories260K"), ""), "");
}

}  // namespace
}  // namespace h2o

