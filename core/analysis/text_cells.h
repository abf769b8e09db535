#pragma once
// Token pieces as characters. A tokenizer with byte fallback spells a CJK
// character or an emoji as several byte tokens, none of which is text on its
// own; the app draws such a run of tokens once, as the character they make,
// coloured by the fate of the last of them, and labels a heatmap column of
// any of them with that character.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace h2o {

// Bytes at the end of `s` that begin a character not finished within `s`.
size_t utf8_unfinished_tail(std::string_view s);
// Bytes at the start of `s` that continue a character begun before it.
size_t utf8_continuation_head(std::string_view s);
// `s` with every byte that is not part of a well-formed character replaced by U+FFFD.
std::string utf8_repaired(std::string_view s);

// Consecutive positions that make one piece of text.
struct CharGroup {
  int64_t first = 0, last = 0;  // positions, inclusive
  std::string text;             // valid UTF-8
};

// Groups the pieces of positions [first, end) (piece(p) gives position p's
// bytes): a run that starts or ends inside a character joins its neighbours
// until the character is whole (at most 4 pieces, as no character has more
// bytes). Pieces before `first` that finish a character begun earlier are not
// looked at: a group begins at `first` or later.
std::vector<CharGroup> group_characters(const std::function<std::string_view(int64_t)>& piece, int64_t first,
                                        int64_t end);

// The character (or whole piece) position p belongs to, looking at most 3
// positions either side within [0, end).
std::string character_at(const std::function<std::string_view(int64_t)>& piece, int64_t p, int64_t end);

// The word position p's piece is part of: the pieces either side that join it
// letter to letter (SentencePiece's and byte-level BPE's words begin with a
// space, so " possi" + "ble" is one word and "LORD" + "," two), at most
// kWordReach pieces each way within [0, end); a piece that joins nothing is
// its character (character_at). A heatmap names its columns so: "ble" alone
// says nothing of the word it was cut from.
inline constexpr int kWordReach = 3;
std::string word_at(const std::function<std::string_view(int64_t)>& piece, int64_t p, int64_t end);

}  // namespace h2o
