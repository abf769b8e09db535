// Hugging Face tokenizer.json: the tiny vocabulary written as a
// tokenizer.json must encode as its GGUF form does; tokenizer_config.json
// beside it names BOS/EOS; every refusal is one line naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/assets.h"
#include "tests/text/bpe_writers.h"
#include "tests/model_writers.h"
#include "core/text/chat_template.h"
#include "core/model/model.h"
#include "core/text/hf_tokenizer_json.h"
#include "core/text/nfc.h"
#include "core/text/pretokenizer.h"
#include "core/text/tokenizer.h"
#include "tests/error_helpers.h"

namespace h2o {
namespace {

using nlohmann::json;
using test::error_of;
using test::expect_one_line;
using test::kTinyBos;
using test::kTinyEos;
using test::kTinyEot;
using test::kTinyUser;

namespace fs = std::filesystem;

class HfTokenizerJson : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir("hf-tokenizer-json"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `j` as <dir>/<name> and returns the path.
  std::string write(const json& j, const std::string& name = "tokenizer.json") {
    const fs::path path = dir_ / name;
    test::write_json(path, j);
    return path.string();
  }
  // The one-line error reading `j` gives; it must name the file.
  std::string error_for(const json& j) {
    const std::string path = write(j);
    const std::string message = error_of([&] { text::read_hf_tokenizer_json(path); });
    expect_one_line(message, path);
    return message;
  }

  fs::path dir_;
};

#define REQUIRE_PCRE2() \
  if (!text::pretokenizer_available()) GTEST_SKIP() << "this build has no PCRE2"

TEST_F(HfTokenizerJson, EncodesAsTheGgufForm) {
  REQUIRE_PCRE2();
  const auto from_json = load_tokenizer(write(test::tiny_tokenizer_json()));
  const auto from_gguf = tokenizer_from_vocab(test::tiny_bpe_vocab(), kTinyBos, kTinyEos, "tiny.gguf");
  EXPECT_EQ(from_json->vocab_size(), from_gguf->vocab_size());
  for (const std::string text : {"hello world", "abc aaaa xyz 1212", "it's 12 \xC3\xA9\xE4\xBD\xA0!\n\n  x"})
    EXPECT_EQ(from_json->encode(text), from_gguf->encode(text)) << text;
  EXPECT_EQ(from_json->encode("xyz"), (std::vector<int>{270}));  // ignore_merges read from the model
  EXPECT_EQ(from_json->bos_id(), kTinyBos);                      // from the post-processor template
  EXPECT_TRUE(from_json->adds_bos());
  EXPECT_EQ(from_json->eos_id(), kTinyEos);  // <|end_of_text|>, by its usual name
  EXPECT_EQ(from_json->eot_id(), kTinyEot);
  EXPECT_NE(from_json->describe().find("tokenizer.json"), std::string::npos);
}

// Editors may save tokenizer.json with a UTF-8 byte-order mark: it is the same file.
TEST_F(HfTokenizerJson, ByteOrderMarkIsSkipped) {
  REQUIRE_PCRE2();
  const auto plain = load_tokenizer(write(test::tiny_tokenizer_json()));
  const std::string text = test::tiny_tokenizer_json().dump(1);
  const fs::path bom = dir_ / "bom-tokenizer.json";
  test::write_file(bom, std::vector<uint8_t>({0xEF, 0xBB, 0xBF}));
  std::ofstream(bom, std::ios::app | std::ios::binary) << text;
  const auto with_bom = load_tokenizer(bom.string());
  EXPECT_EQ(with_bom->vocab_size(), plain->vocab_size());
  EXPECT_EQ(with_bom->encode("hello world 12"), plain->encode("hello world 12"));
  EXPECT_NE(with_bom->describe().find("bom-tokenizer.json"), std::string::npos);
}

TEST_F(HfTokenizerJson, AddedTokensAreSpecials) {
  REQUIRE_PCRE2();
  const auto tok = load_hf_tokenizer(write(test::tiny_tokenizer_json()));
  EXPECT_EQ(tok->special_id("<|eot_id|>"), kTinyEot);
  EXPECT_EQ(tok->special_id("<u>"), kTinyUser);
  EXPECT_EQ(tok->encode_with_specials("hello<|eot_id|>"), (std::vector<int>{259, kTinyEot}));
  for (const int id : tok->encode("hello<|eot_id|><u>")) EXPECT_LT(id, kTinyBos);
  EXPECT_EQ(tok->piece_text(kTinyEot), "");     // special: true -> control
  EXPECT_EQ(tok->piece_text(kTinyUser), "<u>");  // special: false -> printed as written
}

TEST_F(HfTokenizerJson, AddedTokenRepeatingAPieceStaysNormal) {
  REQUIRE_PCRE2();
  json j = test::tiny_tokenizer_json();
  j["added_tokens"].push_back({{"id", 259}, {"content", "hello"}, {"special", false}});
  const auto tok = load_hf_tokenizer(write(j));
  EXPECT_EQ(tok->encode("hello"), (std::vector<int>{259}));  // merges still make it
  EXPECT_EQ(tok->special_id("hello"), -1);
  EXPECT_EQ(tok->piece_text(259), "hello");
}

TEST_F(HfTokenizerJson, MergesAsPairs) {
  REQUIRE_PCRE2();
  json j = test::tiny_tokenizer_json();
  json pairs = json::array();
  for (const std::string& m : test::tiny_bpe_merges()) pairs.push_back({m.substr(0, m.find(' ')), m.substr(m.find(' ') + 1)});
  j["model"]["merges"] = pairs;
  const auto tok = load_hf_tokenizer(write(j));
  EXPECT_EQ(tok->encode("hello world"), (std::vector<int>{259, 264}));
}

TEST_F(HfTokenizerJson, ConfigBesideNamesBosEosAndAddBos) {
  REQUIRE_PCRE2();
  const std::string path = write(test::tiny_tokenizer_json());
  write({{"bos_token", {{"content", "<|end_of_text|>"}}}, {"eos_token", "<|eot_id|>"}, {"add_bos_token", false}},
        "tokenizer_config.json");
  const auto tok = load_hf_tokenizer(path);
  EXPECT_EQ(tok->bos_id(), kTinyEos);
  EXPECT_EQ(tok->eos_id(), kTinyEot);
  EXPECT_FALSE(tok->adds_bos());

  write({{"eos_token", "<|nope|>"}}, "tokenizer_config.json");
  const std::string message = error_of([&] { load_hf_tokenizer(path); });
  expect_one_line(message, (dir_ / "tokenizer_config.json").string(), "eos_token \"<|nope|>\" is not a token");
}

TEST_F(HfTokenizerJson, WithoutTemplateNoBosIsAdded) {
  REQUIRE_PCRE2();
  json j = test::tiny_tokenizer_json();
  j["post_processor"] = {{"type", "ByteLevel"}};
  EXPECT_FALSE(load_hf_tokenizer(write(j))->adds_bos());
}

TEST_F(HfTokenizerJson, NfcNormalizer) {
  REQUIRE_PCRE2();
  json j = test::tiny_tokenizer_json();
  j["normalizer"] = {{"type", "NFC"}};
  if (!text::nfc_available()) {
    expect_one_line(error_of([&] { load_hf_tokenizer(write(j)); }), "tokenizer.json", "ICU");
    return;
  }
  const auto tok = load_hf_tokenizer(write(j));
  // "é" written decomposed (e + U+0301) encodes as the precomposed U+00E9.
  EXPECT_EQ(tok->encode("caf" "e\xCC\x81"), tok->encode("caf\xC3\xA9"));
  EXPECT_EQ(text::to_nfc("e\xCC\x81"), "\xC3\xA9");
  EXPECT_EQ(text::to_nfc("bad \xFF e\xCC\x81"), "bad \xFF e\xCC\x81");  // invalid UTF-8: left alone
}

// ---------------------------------------------------------------------------
// Refusals.

TEST_F(HfTokenizerJson, UnsupportedModelTypes) {
  for (const char* type : {"WordPiece", "Unigram", "WordLevel"}) {
    json j = test::tiny_tokenizer_json();
    j["model"]["type"] = type;
    EXPECT_NE(error_for(j).find(std::string("model type \"") + type + "\" is not supported"), std::string::npos);
  }
  json j = test::tiny_tokenizer_json();
  j["model"]["byte_fallback"] = true;
  EXPECT_NE(error_for(j).find("byte fallback"), std::string::npos);
}

TEST_F(HfTokenizerJson, NotATokenizerJson) {
  const fs::path text = dir_ / "tokenizer.json";
  test::write_file(text, std::vector<uint8_t>{'{', '"', 'a'});
  expect_one_line(error_of([&] { text::read_hf_tokenizer_json(text.string()); }), text.string(), "invalid JSON");
  EXPECT_NE(error_for(json::array({1, 2})).find("should be a JSON object"), std::string::npos);
  EXPECT_NE(error_for({{"version", "1.0"}}).find("has no model"), std::string::npos);
}

TEST_F(HfTokenizerJson, MalformedParts) {
  const auto with = [&](auto edit) {
    json j = test::tiny_tokenizer_json();
    edit(j);
    return error_for(j);
  };
  EXPECT_NE(with([](json& j) { j["model"]["merges"][2] = "hellll"; }).find("model.merges[2]"), std::string::npos);
  EXPECT_NE(with([](json& j) { j["model"]["merges"][2] = 7; }).find("model.merges[2] should be a string"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["model"]["merges"][1] = json::array({"a"}); }).find("model.merges[1]"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["model"]["vocab"]["h"] = -3; }).find("is negative"), std::string::npos);
  EXPECT_NE(with([](json& j) { j["model"]["vocab"]["h"] = 1 << 30; }).find("too large"), std::string::npos);
  EXPECT_NE(with([](json& j) { j["model"]["vocab"]["h"] = "one"; }).find("should be a token id"), std::string::npos);
  EXPECT_NE(with([](json& j) { j["model"]["vocab"].erase("he"); }).find("= 274 is too large"), std::string::npos);
  // With an added token repeating a vocabulary id (as real files do), the count allows 274 and the gap shows.
  EXPECT_NE(with([](json& j) {
              j["model"]["vocab"].erase("he");
              j["added_tokens"].push_back({{"id", 66}, {"content", "B"}, {"special", false}});
            }).find("token id 256 has no piece"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["model"]["vocab"]["zz"] = 3; }).find("id 3 is given to both"), std::string::npos);
  EXPECT_NE(with([](json& j) { j["added_tokens"][0].erase("content"); }).find("added_tokens[0]"), std::string::npos);
  EXPECT_NE(with([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }).find("\"Lowercase\" is not supported"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["pre_tokenizer"] = nullptr; }).find("no pre_tokenizer"), std::string::npos);
  EXPECT_NE(with([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }).find("\"Whitespace\" is not supported"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["pre_tokenizer"]["pretokenizers"].erase(1); }).find("no ByteLevel"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true; })
                .find("add_prefix_space"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; })
                .find("behavior \"Removed\""),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["invert"] = "yes"; })
                .find("invert should be true or false"),
            std::string::npos);
  EXPECT_NE(with([](json& j) {
              j["added_tokens"] = json::array();
              j["post_processor"] = nullptr;
            }).find("names no BOS token"),
            std::string::npos);
}

TEST_F(HfTokenizerJson, MergeOfUnknownPiecesAndBadRegex) {
  REQUIRE_PCRE2();  // checked when the tokenizer is built
  json j = test::tiny_tokenizer_json();
  j["model"]["merges"][4] = "he qq";
  std::string path = write(j);
  expect_one_line(error_of([&] { load_hf_tokenizer(path); }), path, "\"qq\", which is not in the vocabulary");
  j = test::tiny_tokenizer_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "[unclosed";
  path = write(j);
  expect_one_line(error_of([&] { load_hf_tokenizer(path); }), path, "pattern does not compile");
}

TEST_F(HfTokenizerJson, DispatchByContentsNotName) {
  REQUIRE_PCRE2();
  // Any name: the contents decide (a JSON object, GGUF magic, else SentencePiece).
  const std::string json_path = write(test::tiny_tokenizer_json(), "vocab.model");
  EXPECT_EQ(load_tokenizer(json_path)->encode("hello"), (std::vector<int>{259}));
  const fs::path gguf = dir_ / "vocab.bin";
  test::tiny_bpe_gguf().write(gguf);
  EXPECT_EQ(load_tokenizer(gguf.string())->encode("hello"), (std::vector<int>{259}));
}

// A Hugging Face folder: the model's tokenizer is the tokenizer.json beside
// its weights, and the chat template the one tokenizer_config.json names.
TEST_F(HfTokenizerJson, FoundBesideSafetensorsWithItsTemplate) {
  ModelConfig c = test::tiny_config();
  c.vocab_size = test::kTinyPieces;
  test::write_hf_model(dir_, test::random_arrays(c, 3, false));
  write(test::tiny_tokenizer_json());
  write({{"chat_template", "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"}},
        "tokenizer_config.json");
  const auto model = load_model(dir_.string());
  const auto tokenizer = tokenizer_for(*model, "");
  EXPECT_NE(tokenizer->describe().find("tokenizer.json"), std::string::npos) << tokenizer->describe();
  EXPECT_EQ(tokenizer->encode("hello"), load_tokenizer((dir_ / "tokenizer.json").string())->encode("hello"));
  EXPECT_EQ(choose_template(*tokenizer, "").name, "chatml");
  // Without one, a byte tokenizer, as before.
  fs::remove(dir_ / "tokenizer.json");
  EXPECT_EQ(tokenizer_for(*model, "")->describe().rfind("bytes", 0), 0u);
}

// Llama-2-family folders: the SentencePiece tokenizer.model comes first (their
// tokenizer.json is BPE with byte fallback), with tokenizer_config.json's template.
TEST_F(HfTokenizerJson, SentencePieceBesideSafetensorsTakesTheTemplateToo) {
  H2O_REQUIRE_ASSET("tokenizer.model");
  ModelConfig c = test::tiny_config();
  c.vocab_size = 32000;
  test::write_hf_model(dir_, test::random_arrays(c, 4, false));
  fs::copy_file(test::asset("tokenizer.model"), dir_ / "tokenizer.model");
  write(test::tiny_tokenizer_json());
  write({{"chat_template", "{% for m in messages %}{{ '<|user|>\\n' + m.content + eos_token }}{% endfor %}<|assistant|>"}},
        "tokenizer_config.json");
  const auto tokenizer = tokenizer_for(*load_model(dir_.string()), "");
  EXPECT_NE(tokenizer->describe().find("sentencepiece"), std::string::npos) << tokenizer->describe();
  EXPECT_EQ(choose_template(*tokenizer, "").name, "zephyr");
}

}  // namespace
}  // namespace h2o
