#pragma once
// Token text arrives as raw bytes (a byte-level BPE token can end in the
// middle of a character: "é" may be split over two tokens). Utf8Stream sits
// between the tokens and whatever shows the text: it hands out only whole
// characters, holding back a trailing incomplete one until the next token
// completes it.
//
// Its output is always valid UTF-8: a byte that cannot begin or continue a
// character (a stray continuation byte, an overlong or out-of-range lead, a
// sequence cut short by another character) comes out as U+FFFD, one per byte.
#include <string>
#include <string_view>

namespace h2o::text {

class Utf8Stream {
 public:
  // Appends `bytes` and returns the complete characters now available.
  std::string push(std::string_view bytes);
  // Ends the stream: a held-back incomplete character comes out as U+FFFD per
  // byte. The stream is empty (and reusable) afterwards.
  std::string flush();
  // Bytes held back, waiting for the rest of their character.
  size_t pending() const { return held_.size(); }

 private:
  std::string held_;
};

// True if `text` is entirely valid UTF-8.
bool is_valid_utf8(std::string_view text);

}  // namespace h2o::text
