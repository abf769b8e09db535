// encode_in_parts (see tokenizer.h): long texts a part at a time.
#include "core/text/tokenizer.h"

namespace h2o {

void encode_parts(const Tokenizer& tokenizer, std::string_view text, const EncodeSink& sink,
                  const EncodeProgress& progress, size_t part_bytes) {
  size_t from = 0;
  while (from < text.size()) {
    // Cut past the next `part_bytes`, where the tokenizer allows; else the rest goes in one part.
    std::optional<Tokenizer::Cut> cut;
    if (text.size() - from > part_bytes) cut = tokenizer.next_cut(text, from + part_bytes);
    const size_t end = cut ? cut->left_end : text.size();
    const std::vector<int> part = tokenizer.encode(std::string(text.substr(from, end - from)));
    from = cut ? cut->right_begin : text.size();
    if (progress) progress(from, text.size());
    if (!sink(part)) return;
  }
}

std::vector<int> encode_in_parts(const Tokenizer& tokenizer, std::string_view text, const EncodeProgress& progress,
                                 size_t part_bytes) {
  std::vector<int> ids;
  ids.reserve(text.size() / 4);  // about four bytes a token in English: one reallocation at most, usually
  encode_parts(
      tokenizer, text,
      [&](std::span<const int> part) {
        ids.insert(ids.end(), part.begin(), part.end());
        return true;
      },
      progress, part_bytes);
  return ids;
}

}  // namespace h2o
