#pragma once
// The pre-tokenizer of a byte-level BPE vocabulary: cuts text into the words
// that BPE merges within ("Hello", " world", "!", "123"), with the regular
// expression the vocabulary was trained with. Matches and the text between
// them both become words (Hugging Face's Split with behavior "Isolated"), so
// the words always cover the whole text.
//
// Backed by PCRE2 in UTF + UCP mode (\p{L}, \p{N}, Unicode \s, lookahead);
// builds without libpcre2 compile a stand-in whose constructor fails with one
// line naming the vocabulary.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace h2o::text {

class Pretokenizer {
 public:
  // Each pattern is applied in turn to the words the previous one produced.
  // Throws Error("<source>: ...") if a pattern does not compile.
  Pretokenizer(const std::vector<std::string>& patterns, std::string source);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // The words of `text`, in order; their concatenation is `text`. Invalid
  // UTF-8 never matches a pattern, so it ends up in words of its own.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether this build can split text (was built with PCRE2).
bool pretokenizer_available();

}  // namespace h2o::text
