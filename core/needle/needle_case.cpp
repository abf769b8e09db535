#include "core/needle/needle_case.h"

#include "core/base/error.h"

namespace h2o {

int64_t needle_offset(int64_t length, int depth, int64_t needle_tokens) {
  const int64_t room = length - 1 - needle_tokens;
  return (2 * int64_t(depth) * room + 100) / 200;
}

NeedleStream needle_stream(const NeedleCase& c, int64_t length, int depth) {
  const int64_t n = int64_t(c.needle.size());
  const int64_t k = needle_offset(length, depth, n);
  const auto hay = [&](int64_t i) { return c.haystack.begin() + i; };
  NeedleStream s;
  s.tokens.reserve(size_t(length) + c.question.size() + c.answer.size());
  s.tokens.push_back(c.bos);
  s.tokens.insert(s.tokens.end(), hay(0), hay(k));
  s.tokens.insert(s.tokens.end(), c.needle.begin(), c.needle.end());
  s.tokens.insert(s.tokens.end(), hay(k), hay(length - 1 - n));
  s.context = length;
  s.tokens.insert(s.tokens.end(), c.question.begin(), c.question.end());
  s.question_end = int64_t(s.tokens.size());
  s.tokens.insert(s.tokens.end(), c.answer.begin(), c.answer.end());
  s.needle_begin = int32_t(1 + k);
  s.needle_end = int32_t(1 + k + n);
  return s;
}

NeedleStream stream_without_needle(const NeedleCase& c, int64_t length) {
  const int64_t n = int64_t(c.needle.size());
  NeedleStream s;
  s.tokens.push_back(c.bos);
  s.tokens.insert(s.tokens.end(), c.haystack.begin(), c.haystack.begin() + (length - 1 - n));
  s.context = int64_t(s.tokens.size());
  s.tokens.insert(s.tokens.end(), c.question.begin(), c.question.end());
  s.question_end = int64_t(s.tokens.size());
  s.tokens.insert(s.tokens.end(), c.answer.begin(), c.answer.end());
  return s;
}

void check_needle_case(const NeedleCase& c, std::span<const int64_t> lengths, std::span<const int> depths,
                       const NeedleNames& names) {
  for (const auto& [ids, name] : {std::pair{&c.needle, &names.needle}, {&c.question, &names.question},
                                  {&c.answer, &names.answer}})
    if (ids->empty()) fail(*name, "gives no tokens; a needle test needs a needle, a question and an answer");
  for (int d : depths)
    if (d < 0 || d > 100) fail("--depths", "depth " + std::to_string(d) + " is outside 0...100 (percent)");
  const int64_t n = int64_t(c.needle.size());
  for (int64_t length : lengths) {
    if (length - 1 - n < 0)
      fail("--lengths", "length " + std::to_string(length) + " leaves no room for the needle's " + std::to_string(n) +
                            " tokens (" + names.needle + ") beside BOS: at least " + std::to_string(n + 1));
    if (int64_t(c.haystack.size()) < length - 1 - n)
      fail(names.haystack, "has " + std::to_string(c.haystack.size()) + " tokens; a context of " +
                               std::to_string(length) + " needs " + std::to_string(length - 1 - n) +
                               " around a needle of " + std::to_string(n));
  }
}

}  // namespace h2o
