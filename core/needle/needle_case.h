#pragma once
// A needle test's inputs and the stream it builds for one context length and
// depth, exactly as ../shared/docs/SEMANTICS.md ("Needles: what a policy
// forgets") defines them: BOS, the first k haystack tokens, the needle, the
// rest of the haystack up to the length, then the question and the answer.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace h2o {

// The four inputs as token ids (each encoded alone, without BOS) and the BOS id.
struct NeedleCase {
  std::vector<int> haystack, needle, question, answer;
  int bos = 1;
};

// What each input is called in an error: the flag, and the file where one was read.
struct NeedleNames {
  std::string haystack = "--haystack", needle = "--needle", question = "--question", answer = "--answer";
};

// k, the haystack tokens before the needle in a context of `length` tokens
// (BOS included) at `depth` percent: depth % of the room L - 1 - n, rounded half up.
int64_t needle_offset(int64_t length, int depth, int64_t needle_tokens);

// One stream of a needle test: the context, then the question, then the answer.
struct NeedleStream {
  std::vector<int> tokens;
  int64_t context = 0;       // tokens before the question (the length; L - n with the needle left out)
  int64_t question_end = 0;  // tokens before the answer
  int32_t needle_begin = 0, needle_end = 0;  // stream positions [begin, end); empty without the needle
  int64_t needle_tokens() const { return needle_end - needle_begin; }
  std::span<const int> answer() const { return std::span<const int>(tokens).subspan(size_t(question_end)); }
};

// The stream of `length` and `depth` (SEMANTICS.md); check_needle_case first.
NeedleStream needle_stream(const NeedleCase& c, int64_t length, int depth);
// The same length's stream with the needle's n tokens left out (BOS, haystack
// tokens 0 ... L - 2 - n, question, answer): recall had the model never seen it.
NeedleStream stream_without_needle(const NeedleCase& c, int64_t length);

// Throws Error with one line naming the input or flag: an empty needle,
// question or answer; a depth outside 0...100; a length that leaves no room
// for the needle (--lengths); a haystack shorter than a length's L - 1 - n tokens.
void check_needle_case(const NeedleCase& c, std::span<const int64_t> lengths, std::span<const int> depths,
                       const NeedleNames& names = {});

}  // namespace h2o
