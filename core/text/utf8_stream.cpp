// UTF-8 validity as RFC 3629 / Unicode table 3-7 define it: no overlong
// forms, no surrogates, nothing above U+10FFFF.
#include "core/text/utf8_stream.h"

#include <cstdint>

namespace h2o::text {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the character a lead byte starts, 0 if it cannot start one.
int sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The range the byte after `lead` must fall in (it narrows for E0, ED, F0, F4).
bool second_byte_ok(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

enum class Scan { kComplete, kIncomplete, kInvalid };

// What the bytes at `text[at..]` hold: a whole valid character (its length in
// `length`), the valid beginning of one that the text ends before, or a byte
// that starts no character.
Scan scan(std::string_view text, size_t at, int& length) {
  const auto lead = static_cast<uint8_t>(text[at]);
  length = sequence_length(lead);
  if (length == 0) return Scan::kInvalid;
  for (int k = 1; k < length; ++k) {
    if (at + k >= text.size()) return Scan::kIncomplete;
    const auto b = static_cast<uint8_t>(text[at + k]);
    const bool ok = k == 1 ? second_byte_ok(lead, b) : (b & 0xC0) == 0x80;
    if (!ok) return Scan::kInvalid;
  }
  return Scan::kComplete;
}

}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  held_.append(bytes);
  std::string out;
  out.reserve(held_.size());
  size_t at = 0;
  while (at < held_.size()) {
    int length = 0;
    const Scan s = scan(held_, at, length);
    if (s == Scan::kIncomplete) break;  // the rest waits for the next push
    if (s == Scan::kInvalid) {
      out += kReplacement;
      ++at;
      continue;
    }
    out.append(held_, at, static_cast<size_t>(length));
    at += static_cast<size_t>(length);
  }
  held_.erase(0, at);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  for (size_t i = 0; i < held_.size(); ++i) out += kReplacement;
  held_.clear();
  return out;
}

bool is_valid_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    int length = 0;
    if (scan(text, at, length) != Scan::kComplete) return false;
    at += static_cast<size_t>(length);
  }
  return true;
}

}  // namespace h2o::text
