// A needle test's streams and its refusals, as SEMANTICS.md ("Needles") defines them.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/base/error.h"
#include "core/needle/needle_case.h"
#include "core/needle/needle_measure.h"

using namespace h2o;

namespace {

NeedleCase counting_case(int haystack) {
  NeedleCase c;
  c.haystack.resize(size_t(haystack));
  std::iota(c.haystack.begin(), c.haystack.end(), 100);  // haystack token i is 100 + i
  c.needle = {7, 8, 9};
  c.question = {5};
  c.answer = {6, 6};
  c.bos = 1;
  return c;
}

std::string error_of(const NeedleCase& c, std::vector<int64_t> lengths, std::vector<int> depths) {
  try {
    check_needle_case(c, lengths, depths);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// k = floor((2 d (L - 1 - n) + 100) / 200): d % of the room, rounded half up.
TEST(NeedleStream, PlacesTheNeedleAtItsDepthOfTheRoom) {
  EXPECT_EQ(needle_offset(20, 0, 3), 0);
  EXPECT_EQ(needle_offset(20, 50, 3), 8);   // 8 of the room of 16
  EXPECT_EQ(needle_offset(21, 50, 3), 9);   // 8.5 rounds up
  EXPECT_EQ(needle_offset(20, 100, 3), 16);
  EXPECT_EQ(needle_offset(20, 10, 3), 2);   // 1.6 rounds to 2
}

TEST(NeedleStream, IsBosHaystackNeedleRestThenQuestionAndAnswer) {
  const NeedleCase c = counting_case(40);
  const NeedleStream s = needle_stream(c, 20, 50);
  ASSERT_EQ(s.tokens.size(), 20u + 1 + 2);
  EXPECT_EQ(s.context, 20);
  EXPECT_EQ(s.question_end, 21);
  EXPECT_EQ(s.tokens[0], 1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(s.tokens[size_t(1 + i)], 100 + i);
  EXPECT_EQ(s.needle_begin, 9);
  EXPECT_EQ(s.needle_end, 12);
  EXPECT_EQ((std::vector<int>(s.tokens.begin() + 9, s.tokens.begin() + 12)), c.needle);
  // The rest of the haystack from token k on, up to L - 2 - n = 16.
  for (int i = 12; i < 20; ++i) EXPECT_EQ(s.tokens[size_t(i)], 100 + (i - 4));
  EXPECT_EQ(s.tokens[20], 5);
  EXPECT_EQ((std::vector<int>(s.answer().begin(), s.answer().end())), c.answer);
  // At depth 100 the needle closes the context; at 0 it follows BOS.
  EXPECT_EQ(needle_stream(c, 20, 100).needle_end, 20);
  EXPECT_EQ(needle_stream(c, 20, 0).needle_begin, 1);
}

TEST(NeedleStream, WithoutTheNeedleIsTheSameHaystackShorterByIt) {
  const NeedleCase c = counting_case(40);
  const NeedleStream s = stream_without_needle(c, 20);
  EXPECT_EQ(s.context, 17);  // L - n
  ASSERT_EQ(s.tokens.size(), 17u + 3);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(s.tokens[size_t(1 + i)], 100 + i);  // haystack 0 ... L - 2 - n
  EXPECT_EQ(s.needle_tokens(), 0);
}

TEST(NeedleCase, RefusesBadInputsWithOneLineNamingThem) {
  const NeedleCase c = counting_case(16);
  EXPECT_EQ(error_of(c, {20}, {0, 100}), "");
  EXPECT_NE(error_of(c, {20}, {101}).find("--depths: depth 101 is outside 0...100"), std::string::npos);
  EXPECT_NE(error_of(c, {20}, {-1}).find("--depths"), std::string::npos);
  EXPECT_NE(error_of(c, {21}, {50}).find("--haystack: has 16 tokens; a context of 21 needs 17"), std::string::npos);
  EXPECT_NE(error_of(c, {3}, {50}).find("--lengths: length 3 leaves no room for the needle's 3 tokens (--needle)"),
            std::string::npos);
  NeedleCase no_answer = c;
  no_answer.answer.clear();
  EXPECT_NE(error_of(no_answer, {20}, {50}).find("--answer: gives no tokens"), std::string::npos);
  for (const std::string& e : {error_of(c, {20}, {101}), error_of(no_answer, {20}, {0})})
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(NeedleMeasure, CountsHeldPositionsPerHeadAndTheirMeanFraction) {
  LayerState a{0, {{0, 3, 4, 5, 9}, {0, 9}}, {}}, b{1, {{3, 5}, {}}, {}};
  const std::vector<int> held = held_needle(std::vector<LayerState>{a, b}, 3, 6);
  EXPECT_EQ(held, (std::vector<int>{3, 0, 2, 0}));
  EXPECT_DOUBLE_EQ(survival_fraction(held, 3), (1.0 + 0 + 2.0 / 3 + 0) / 4);
}

TEST(NeedleMeasure, RecallSumsTheAnswersNllAndIsExactOnlyWhenEveryTokenIsTopOne) {
  // Two rows over a vocabulary of 3: the first predicts token 2 best, the second token 0.
  const std::vector<float> logits = {0, 1, 3, 2, 0, 0};
  const Recall hit = answer_recall(logits, std::vector<int>{2, 0}, 3);
  EXPECT_TRUE(hit.exact);
  const double lse0 = std::log(1 + std::exp(1.0) + std::exp(3.0)), lse1 = std::log(std::exp(2.0) + 2);
  EXPECT_NEAR(hit.nll, (lse0 - 3) + (lse1 - 2), 1e-12);
  EXPECT_EQ(hit.tokens, 2);
  EXPECT_FALSE(answer_recall(logits, std::vector<int>{2, 1}, 3).exact);
}
