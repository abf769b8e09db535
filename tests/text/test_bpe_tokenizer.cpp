// The byte-level BPE tokenizer on a tiny hand-made vocabulary
// (bpe_writers.h): GPT-2's byte alphabet, merge ranks, the pre-tokenizers,
// special tokens, decoding, and one error line for each malformed vocabulary.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/text/bpe_writers.h"
#include "core/text/bpe_tokenizer.h"
#include "core/text/byte_unicode.h"
#include "core/text/pretokenizer.h"
#include "core/text/special_tokens.h"
#include "core/text/tokenizer.h"
#include "tests/error_helpers.h"

namespace h2o {
namespace {

using test::error_of;
using test::expect_one_line;
using test::kTinyBos;
using test::kTinyEos;
using test::kTinyEot;
using test::kTinyUser;
using test::tiny_bpe_vocab;

#define REQUIRE_PCRE2() \
  if (!text::pretokenizer_available()) GTEST_SKIP() << "this build has no PCRE2"

std::unique_ptr<Tokenizer> tiny(const std::string& pre = "llama-bpe") {
  return tokenizer_from_vocab(tiny_bpe_vocab(pre), kTinyBos, kTinyEos, "tiny.gguf");
}

// ---------------------------------------------------------------------------
// GPT-2's byte alphabet.

TEST(ByteAlphabet, PrintableBytesStandForThemselves) {
  EXPECT_EQ(text::byte_to_codepoint('A'), U'A');
  EXPECT_EQ(text::byte_to_codepoint('~'), U'~');
  EXPECT_EQ(text::byte_to_codepoint(0xA1), U'\u00A1');
  EXPECT_EQ(text::byte_to_codepoint(0xFF), U'\u00FF');
}

TEST(ByteAlphabet, OtherBytesAreShiftedPastLatin1InOrder) {
  EXPECT_EQ(text::byte_to_codepoint(0x00), U'\u0100');
  EXPECT_EQ(text::byte_to_codepoint(' '), U'\u0120');   // "Ġ"
  EXPECT_EQ(text::byte_to_codepoint('\n'), U'\u010A');  // "Ċ"
  EXPECT_EQ(text::byte_to_codepoint(0x7F), U'\u0121');
  EXPECT_EQ(text::byte_to_codepoint(0xAD), U'\u0143');  // the soft hyphen is the last of the 68
  EXPECT_EQ(text::byte_to_utf8(' '), "\xC4\xA0");
}

TEST(ByteAlphabet, IsABijection) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = text::byte_to_codepoint(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(cp).second) << b;
    EXPECT_EQ(text::codepoint_to_byte(cp), b);
  }
  EXPECT_EQ(text::codepoint_to_byte(U' '), -1);  // space itself is not in the alphabet
  EXPECT_EQ(text::codepoint_to_byte(U'\u4F60'), -1);
}

TEST(ByteAlphabet, TextRoundTripsAndForeignCharactersSurvive) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(text::byte_level_to_bytes(text::bytes_to_byte_level(all)), all);
  EXPECT_EQ(text::bytes_to_byte_level("a b\n"), "a\xC4\xA0" "b\xC4\x8A");
  // Characters outside the alphabet (and broken UTF-8) are kept, not dropped.
  EXPECT_EQ(text::byte_level_to_bytes("x\xE4\xBD\xA0y\xC4"), "x\xE4\xBD\xA0y\xC4");
}

// ---------------------------------------------------------------------------
// Merges.

TEST(BpeMerges, BuildWordsByRank) {
  REQUIRE_PCRE2();
  const auto tok = tiny();
  EXPECT_EQ(tok->encode("hello world"), (std::vector<int>{259, 264}));
  // "a b" (rank 10) and "b c" (rank 9) compete for the b: the lower rank wins.
  EXPECT_EQ(tok->encode("abc"), (std::vector<int>{'a', 265}));
  EXPECT_EQ(tok->encode("abd"), (std::vector<int>{266, 'd'}));
  // Equal ranks go left to right, and merged pieces merge again.
  EXPECT_EQ(tok->encode("aaa"), (std::vector<int>{267, 'a'}));
  EXPECT_EQ(tok->encode("aaaa"), (std::vector<int>{268}));
  EXPECT_EQ(tok->encode("aaaaaaaaa"), (std::vector<int>{268, 268, 'a'}));
  EXPECT_TRUE(tok->encode("").empty());
}

TEST(BpeMerges, EveryByteHasAPiece) {
  REQUIRE_PCRE2();
  const auto tok = tiny();
  std::string all;
  for (int b = 1; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string spelled;
  for (const int id : tok->encode(all)) spelled += tok->piece_text(id);
  EXPECT_EQ(spelled, all);  // invalid UTF-8 included: bytes in, the same bytes out
}

TEST(BpeMerges, LongWordsAreNotQuadratic) {
  REQUIRE_PCRE2();
  const auto tok = tiny();
  // 200 000 a's are one word: merges to 50 000 "aaaa" pieces.
  const auto ids = tok->encode(std::string(200000, 'a'));
  ASSERT_EQ(ids.size(), 50000u);
  EXPECT_EQ(ids.front(), 268);
  // A long run of spaces is one word too.
  EXPECT_EQ(tok->encode(std::string(100000, ' ')).size(), 100000u);
}

// ---------------------------------------------------------------------------
// Pre-tokenizers.

TEST(BpePretokenizer, Llama3TakesWholeWordPiecesAndThreeDigits) {
  REQUIRE_PCRE2();
  const auto llama3 = tiny("llama-bpe");
  const auto qwen2 = tiny("qwen2");
  // "xyz" is a piece no merge makes: Llama-3 (ignore_merges) finds it whole.
  EXPECT_EQ(llama3->encode("xyz"), (std::vector<int>{270}));
  EXPECT_EQ(qwen2->encode("xyz"), (std::vector<int>{'x', 'y', 'z'}));
  // Llama-3 groups up to three digits, Qwen2 takes them one at a time.
  EXPECT_EQ(llama3->encode("12"), (std::vector<int>{269}));
  EXPECT_EQ(qwen2->encode("12"), (std::vector<int>{'1', '2'}));
  // "1212" is "121" + "2" for Llama-3: "1 2" merges, nothing makes "121".
  EXPECT_EQ(llama3->encode("1212"), (std::vector<int>{269, '1', '2'}));
  EXPECT_EQ(qwen2->encode("1212"), (std::vector<int>{'1', '2', '1', '2'}));
}

TEST(BpePretokenizer, SplitsCoverTheTextAndSeparateWords) {
  REQUIRE_PCRE2();
  const text::Pretokenizer pre(*text::pretokenizer_patterns("llama-bpe"), "test");
  const auto words = pre.split("Hello, world! It's 12345  ok\n\n");
  std::vector<std::string> got(words.begin(), words.end());
  EXPECT_EQ(got, (std::vector<std::string>{"Hello", ",", " world", "!", " It", "'s", " ", "123", "45", " ", " ok", "\n\n"}));
  // Invalid UTF-8 never matches: it becomes words of its own, nothing is lost.
  std::string joined;
  for (const auto w : pre.split("ab\xFF\xFE cd\xC3")) joined += w;
  EXPECT_EQ(joined, "ab\xFF\xFE cd\xC3");
}

TEST(BpePretokenizer, KnownNames) {
  for (const char* name : {"llama-bpe", "llama3", "llama-v3", "qwen2", "gpt-2"})
    EXPECT_TRUE(text::pretokenizer_patterns(name).has_value()) << name;
  EXPECT_FALSE(text::pretokenizer_patterns("default").has_value());
}

// ---------------------------------------------------------------------------
// Special tokens and decoding.

TEST(BpeSpecials, NeverMatchedInUserText) {
  REQUIRE_PCRE2();
  const auto tok = tiny();
  const std::string text = "hello<|eot_id|>world<u><|begin_of_text|>";
  for (const int id : tok->encode(text)) EXPECT_LT(id, kTinyBos) << id;
  EXPECT_EQ(tok->encode_with_specials(text),
            (std::vector<int>{259, kTinyEot, 'w', 261, 263, kTinyUser, kTinyBos}));
  EXPECT_EQ(tok->special_id("<|eot_id|>"), kTinyEot);
  EXPECT_EQ(tok->special_id("<u>"), kTinyUser);
  EXPECT_EQ(tok->special_id("hello"), -1);  // a normal piece is not special
  EXPECT_EQ(tok->eot_id(), kTinyEot);       // found by its text
}

TEST(BpeSpecials, NeverMadeByMergesOrWholeWordLookup) {
  REQUIRE_PCRE2();
  auto v = tiny_bpe_vocab();  // llama-bpe: whole words that are pieces are taken whole
  v.pieces.push_back("!!");   // a control token whose text is a word of its own
  v.types.push_back(3);
  v.scores.push_back(0);
  v.merges.push_back("! !");  // a merge that would make it: dropped
  const auto tok = tokenizer_from_vocab(v, kTinyBos, kTinyEos, "t.gguf");
  EXPECT_EQ(tok->encode("!!"), (std::vector<int>{'!', '!'}));
  EXPECT_EQ(tok->encode_with_specials("!!"), (std::vector<int>{test::kTinyPieces}));
}

TEST(BpeSpecials, LongestSpecialWins) {
  text::SpecialTokens specials;
  specials.add("<a>", 1);
  specials.add("<a><b>", 2);
  specials.add("", 3);     // ignored
  specials.add("<a>", 4);  // the first id stays
  const auto segments = specials.split("x<a><b>y<a>");
  ASSERT_EQ(segments.size(), 4u);
  EXPECT_EQ(segments[0].text, "x");
  EXPECT_EQ(segments[0].id, -1);
  EXPECT_EQ(segments[1].id, 2);
  EXPECT_EQ(segments[2].text, "y");
  EXPECT_EQ(segments[3].id, 1);
  EXPECT_EQ(specials.find("<a>"), 1);
  EXPECT_TRUE(specials.split("").empty());
}

TEST(BpeDecoding, PiecesAreTheirRawBytes) {
  REQUIRE_PCRE2();
  const auto tok = tiny();
  EXPECT_EQ(tok->piece_text(264), " world");   // "Ġworld"
  EXPECT_EQ(tok->piece_text(0xC3), "\xC3");    // half a character: raw, Utf8Stream completes it
  EXPECT_EQ(tok->piece_text(kTinyEot), "");     // control: no surface text
  EXPECT_EQ(tok->piece_text(kTinyUser), "<u>");  // user-defined: as written
  EXPECT_EQ(tok->piece_text(99999), "<99999>");
  EXPECT_EQ(tok->piece_text(-1), "<-1>");
  EXPECT_EQ(tok->piece_text(259, kTinyBos), "hello");  // no dummy-prefix space to drop
}

TEST(BpeVocabulary, BosRulesFollowLlamaCpp) {
  REQUIRE_PCRE2();
  EXPECT_TRUE(tiny("llama-bpe")->adds_bos());
  EXPECT_FALSE(tiny("qwen2")->adds_bos());
  auto vocab = tiny_bpe_vocab("qwen2");
  vocab.add_bos = true;  // tokenizer.ggml.add_bos_token overrides the default
  EXPECT_TRUE(tokenizer_from_vocab(vocab, kTinyBos, kTinyEos, "t.gguf")->adds_bos());
  const auto tok = tiny();
  EXPECT_EQ(tok->vocab_size(), test::kTinyPieces);
  EXPECT_EQ(tok->bos_id(), kTinyBos);
  EXPECT_EQ(tok->eos_id(), kTinyEos);
  EXPECT_NE(tok->describe().find("tiny.gguf"), std::string::npos) << tok->describe();
  EXPECT_NE(tok->describe().find("llama-bpe"), std::string::npos) << tok->describe();
}

// ---------------------------------------------------------------------------
// Malformed vocabularies: one line naming the file and the problem.

std::string vocab_error(const EmbeddedVocab& vocab, int bos = kTinyBos, int eos = kTinyEos) {
  return error_of([&] { tokenizer_from_vocab(vocab, bos, eos, "bad.gguf"); });
}

TEST(BpeBadVocabulary, MergeWithoutOneSpace) {
  for (const std::string line : {"ab", "a b c", " ab", "ab ", ""}) {
    auto v = tiny_bpe_vocab();
    v.merges[3] = line;
    expect_one_line(vocab_error(v), "bad.gguf", "tokenizer.ggml.merges[3]");
  }
}

TEST(BpeBadVocabulary, MergeNamingUnknownPieces) {
  REQUIRE_PCRE2();  // checked while building the tokenizer
  auto v = tiny_bpe_vocab();
  v.merges[2] = "he zz";
  expect_one_line(vocab_error(v), "bad.gguf", "\"zz\", which is not in the vocabulary");
  v = tiny_bpe_vocab();
  v.merges[2] = "x q";  // both pieces exist, "xq" does not
  expect_one_line(vocab_error(v), "bad.gguf", "\"xq\", which is not in the vocabulary");
}

TEST(BpeBadVocabulary, PreTokenizerUnknownOrMissing) {
  auto v = tiny_bpe_vocab("deepseek-coder");
  expect_one_line(vocab_error(v), "bad.gguf", "tokenizer.ggml.pre \"deepseek-coder\" is not a supported pre-tokenizer");
  v.pre = "";
  expect_one_line(vocab_error(v), "bad.gguf", "no tokenizer.ggml.pre");
}

TEST(BpeBadVocabulary, NoMerges) {
  auto v = tiny_bpe_vocab();
  v.merges.clear();
  expect_one_line(vocab_error(v), "bad.gguf", "tokenizer.ggml.merges");
}

TEST(BpeBadVocabulary, ByteWithoutAPiece) {
  REQUIRE_PCRE2();
  auto v = tiny_bpe_vocab();
  v.pieces['A'] = "AA";
  expect_one_line(vocab_error(v), "bad.gguf", "no piece for byte 0x41");
  v = tiny_bpe_vocab();
  v.types['A'] = 3;  // a byte's piece that is a control token cannot spell text
  expect_one_line(vocab_error(v), "bad.gguf", "no piece for byte 0x41");
}

// GPT-NeoX's vocabulary has no pieces for the bytes valid UTF-8 never holds
// (0xC0, 0xC1, 0xF5-0xFF): it loads, and only text holding one is refused.
TEST(BpeBadVocabulary, BytesNeverInUtf8MayLackAPiece) {
  REQUIRE_PCRE2();
  auto v = tiny_bpe_vocab();
  v.pieces[0xC0] = "never-0xC0";
  v.pieces[0xFF] = "never-0xFF";
  const auto tok = tokenizer_from_vocab(v, kTinyBos, kTinyEos, "neox.gguf");
  EXPECT_FALSE(tok->encode("caf\xc3\xa9 ok").empty());
  expect_one_line(error_of([&] { tok->encode("a\xC0" "b"); }), "neox.gguf", "byte 0xC0");
  expect_one_line(error_of([&] { tok->encode("\xFF"); }), "neox.gguf", "byte 0xFF");
}

TEST(BpeBadVocabulary, SpecialIdsOutOfRange) {
  REQUIRE_PCRE2();
  expect_one_line(vocab_error(tiny_bpe_vocab(), 5000), "bad.gguf", "BOS id 5000");
  expect_one_line(vocab_error(tiny_bpe_vocab(), -1), "bad.gguf", "BOS id -1");
  expect_one_line(vocab_error(tiny_bpe_vocab(), kTinyBos, 99999), "bad.gguf", "EOS id 99999");
  auto v = tiny_bpe_vocab();
  v.eot_id = 12345;
  expect_one_line(vocab_error(v), "bad.gguf", "end-of-turn id 12345");
}

TEST(BpeBadVocabulary, TypesDoNotMatchPieces) {
  REQUIRE_PCRE2();
  auto v = tiny_bpe_vocab();
  v.types.pop_back();
  expect_one_line(vocab_error(v), "bad.gguf", "piece types");
}

TEST(BpeBadVocabulary, UnsupportedVocabularyType) {
  auto v = tiny_bpe_vocab();
  v.model = "bert";
  expect_one_line(vocab_error(v), "bad.gguf", "\"bert\", which is not supported");
}

TEST(BpeBadVocabulary, PatternThatDoesNotCompile) {
  REQUIRE_PCRE2();
  text::BpeVocab v = text::bpe_vocab_from_gguf(tiny_bpe_vocab(), kTinyBos, kTinyEos, "t.gguf");
  v.patterns = {"(unclosed"};
  expect_one_line(error_of([&] { text::make_bpe_tokenizer(v, "custom.json"); }), "custom.json",
                  "pattern does not compile");
}

TEST(BpeBadVocabulary, NoPcre2IsOneLine) {
  if (text::pretokenizer_available()) GTEST_SKIP() << "this build has PCRE2";
  expect_one_line(vocab_error(tiny_bpe_vocab()), "bad.gguf", "PCRE2");
}

}  // namespace
}  // namespace h2o
