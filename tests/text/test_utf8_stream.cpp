// Utf8Stream: token bytes in, whole characters out, nothing lost or invented.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/text/utf8_stream.h"

namespace h2o::text {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Stream, AsciiPassesStraightThrough) {
  Utf8Stream s;
  EXPECT_EQ(s.push("Hello"), "Hello");
  EXPECT_EQ(s.push(" world"), " world");
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, HoldsBackASplitCharacterUntilItIsWhole) {
  Utf8Stream s;
  // "café" with the é (C3 A9) split over two tokens.
  EXPECT_EQ(s.push("caf\xC3"), "caf");
  EXPECT_EQ(s.pending(), 1u);
  EXPECT_EQ(s.push("\xA9!"), "\xC3\xA9!");
  // A four-byte emoji one byte at a time: nothing until the last byte.
  const std::string emoji = "\xF0\x9F\x98\x80";
  for (size_t i = 0; i + 1 < emoji.size(); ++i) EXPECT_EQ(s.push(emoji.substr(i, 1)), "");
  EXPECT_EQ(s.pending(), 3u);
  EXPECT_EQ(s.push(emoji.substr(3)), emoji);
  EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, EveryCutOfValidTextGivesTheTextBack) {
  const std::string text = "a\xC3\xA9" "b\xE2\x82\xAC" "c\xF0\x9F\x98\x80" "d\xE4\xBD\xA0";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Utf8Stream s;
    std::string out = s.push(text.substr(0, cut));
    out += s.push(text.substr(cut));
    out += s.flush();
    EXPECT_EQ(out, text) << "cut at " << cut;
    EXPECT_TRUE(is_valid_utf8(s.push(text.substr(0, cut)))) << cut;
  }
}

TEST(Utf8Stream, InvalidBytesBecomeReplacementCharacters) {
  Utf8Stream s;
  EXPECT_EQ(s.push("a\x80" "b"), "a" + kFffd + "b");                 // stray continuation byte
  EXPECT_EQ(s.push("\xC0\xAF"), kFffd + kFffd);                      // overlong lead, then its continuation
  EXPECT_EQ(s.push("\xED\xA0\x80"), kFffd + kFffd + kFffd);          // a surrogate (U+D800)
  EXPECT_EQ(s.push("\xF5"), kFffd);                                  // beyond U+10FFFF
  EXPECT_EQ(s.push("\xE2\x82" "x"), kFffd + kFffd + "x");            // cut short by another character
  EXPECT_EQ(s.pending(), 0u);
}

TEST(Utf8Stream, FlushEndsAnIncompleteCharacter) {
  Utf8Stream s;
  EXPECT_EQ(s.push("ok\xE2\x82"), "ok");
  EXPECT_EQ(s.flush(), kFffd + kFffd);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.push("again"), "again");  // reusable after a flush
}

TEST(Utf8Validity, TellsValidFromInvalid) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain \xC3\xA9 \xF4\x8F\xBF\xBF"));  // up to U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));                 // U+110000
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\x80"));                     // overlong
  EXPECT_FALSE(is_valid_utf8("cut \xC3"));
}

}  // namespace
}  // namespace h2o::text
