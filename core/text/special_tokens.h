#pragma once
// Special tokens by their text (<|begin_of_text|>, <|eot_id|>, <|im_start|>,
// <s>), for the text that chat templates write. User text never goes through
// this: Tokenizer::encode treats such strings as plain text, so a user cannot
// forge a turn boundary.
#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/text/tokenizer.h"

namespace h2o::text {

class SpecialTokens {
 public:
  // A piece of text: plain (id -1) or one special token.
  struct Segment {
    std::string_view text;
    int id = -1;
  };

  // Registers a token; empty texts are ignored, and the first id given for a
  // text wins.
  void add(const std::string& text, int id);
  bool empty() const { return by_text_.empty(); }
  // The id of the token whose text is exactly `text`, or -1.
  int find(std::string_view text) const;
  // `text` cut into plain runs and special tokens, left to right, taking the
  // longest special token that starts at each position.
  std::vector<Segment> split(std::string_view text) const;

 private:
  std::unordered_map<std::string, int> by_text_;
  // Texts by their first byte, longest first.
  std::array<std::vector<std::pair<std::string, int>>, 256> by_first_byte_;
};

// `text` cut at `specials`, as Tokenizer::split_specials returns it.
std::vector<Tokenizer::Segment> split_at(const SpecialTokens& specials, std::string_view text);

}  // namespace h2o::text
