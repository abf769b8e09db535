// The GPT-2 byte alphabet (see byte_unicode.h), built once from its rule
// rather than stored as a table.
#include "core/text/byte_unicode.h"

#include <array>

namespace h2o::text {
namespace {

bool stands_for_itself(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

std::string utf8_of(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {  // the alphabet stays below U+0800: two bytes at most
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

struct Alphabet {
  std::array<char32_t, 256> codepoint{};
  std::array<std::string, 256> utf8;
  std::array<int16_t, 512> byte_of{};  // every code point of the alphabet is below U+0200

  Alphabet() {
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      codepoint[b] = stands_for_itself(b) ? char32_t(b) : next++;
      utf8[b] = utf8_of(codepoint[b]);
      byte_of[codepoint[b]] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

char32_t byte_to_codepoint(uint8_t b) { return alphabet().codepoint[b]; }

const std::string& byte_to_utf8(uint8_t b) { return alphabet().utf8[b]; }

int codepoint_to_byte(char32_t cp) { return cp < alphabet().byte_of.size() ? alphabet().byte_of[cp] : -1; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += byte_to_utf8(static_cast<uint8_t>(c));
  return out;
}

std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_byte_level_as_bytes(text, out);
  return out;
}

void append_byte_level_as_bytes(std::string_view text, std::string& out) {
  for (size_t i = 0; i < text.size();) {
    const auto c0 = static_cast<uint8_t>(text[i]);
    // The alphabet is ASCII and two-byte sequences; anything else is kept as is.
    if (c0 < 0x80) {
      const int b = codepoint_to_byte(c0);
      if (b >= 0) out.push_back(static_cast<char>(b));
      else out.push_back(static_cast<char>(c0));
      ++i;
      continue;
    }
    if ((c0 & 0xE0) == 0xC0 && i + 1 < text.size() && (static_cast<uint8_t>(text[i + 1]) & 0xC0) == 0x80) {
      const char32_t cp = (char32_t(c0 & 0x1F) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3F);
      const int b = codepoint_to_byte(cp);
      if (b >= 0) out.push_back(static_cast<char>(b));
      else out.append(text.substr(i, 2));
      i += 2;
      continue;
    }
    out.push_back(static_cast<char>(c0));
    ++i;
  }
}

}  // namespace h2o::text
