#include "core/analysis/text_cells.h"

#include <algorithm>

#include "core/base/utf8.h"

namespace h2o {

namespace {
// Bytes of the character a lead byte begins (0: not a lead byte).
size_t lead_length(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
}
bool continuation(unsigned char c) { return (c & 0xc0) == 0x80; }
constexpr int64_t kMaxJoined = 4;
}  // namespace

size_t utf8_unfinished_tail(std::string_view s) {
  // The last lead byte within 3 bytes of the end, and whether its character fits.
  for (size_t back = 1; back <= std::min<size_t>(4, s.size()); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if (continuation(c)) continue;
    const size_t len = lead_length(c);
    return len > back ? back : 0;
  }
  return 0;
}

size_t utf8_continuation_head(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && n < 3 && continuation(static_cast<unsigned char>(s[n]))) ++n;
  return n;
}

std::string utf8_repaired(std::string_view s) {
  if (valid_utf8(s)) return std::string(s);
  std::string out;
  size_t i = 0;
  bool bad_run = false;
  while (i < s.size()) {
    const size_t len = lead_length(static_cast<unsigned char>(s[i]));
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = continuation(static_cast<unsigned char>(s[i + k]));
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
      bad_run = false;
    } else {
      if (!bad_run) out += "\xef\xbf\xbd";  // one U+FFFD per run of bad bytes
      bad_run = true;
      ++i;
    }
  }
  return out;
}

std::vector<CharGroup> group_characters(const std::function<std::string_view(int64_t)>& piece, int64_t first,
                                        int64_t end) {
  std::vector<CharGroup> out;
  int64_t p = first;
  while (p < end) {
    CharGroup g{p, p, std::string(piece(p))};
    // Join the following pieces while the text so far ends inside a character
    // and the next piece continues it.
    while (g.last + 1 < end && g.last - g.first + 1 < kMaxJoined && utf8_unfinished_tail(g.text) > 0) {
      const std::string_view next = piece(g.last + 1);
      if (utf8_continuation_head(next) == 0) break;
      g.text += next;
      ++g.last;
    }
    g.text = utf8_repaired(g.text);
    p = g.last + 1;
    out.push_back(std::move(g));
  }
  return out;
}

std::string character_at(const std::function<std::string_view(int64_t)>& piece, int64_t p, int64_t end) {
  if (p < 0 || p >= end) return {};
  // Back to the piece that holds the lead byte: the pieces after it begin with continuation bytes.
  int64_t start = p;
  while (start > 0 && p - start < kMaxJoined - 1 && utf8_continuation_head(piece(start)) > 0) --start;
  for (const CharGroup& g : group_characters(piece, start, std::min(end, p + kMaxJoined)))
    if (g.first <= p && p <= g.last) return g.text;
  return utf8_repaired(piece(p));
}

namespace {
bool word_byte(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
}  // namespace

std::string word_at(const std::function<std::string_view(int64_t)>& piece, int64_t p, int64_t end) {
  if (p < 0 || p >= end) return {};
  // Positions `left` and `left + 1` are one word: a letter or digit on each side of the seam.
  const auto joined = [&](int64_t left) {
    const std::string_view a = piece(left), b = piece(left + 1);
    return !a.empty() && !b.empty() && word_byte(a.back()) && word_byte(b.front());
  };
  int64_t first = p, last = p;
  while (first > 0 && p - first < kWordReach && joined(first - 1)) --first;
  while (last + 1 < end && last - p < kWordReach && joined(last)) ++last;
  if (first == last) return character_at(piece, p, end);
  std::string word;
  for (int64_t q = first; q <= last; ++q) word += piece(q);
  return utf8_repaired(word);
}

}  // namespace h2o
