#pragma once
// GPT-2's byte <-> Unicode alphabet, used by every byte-level BPE vocabulary
// (GPT-2, Llama-3, Qwen2): each of the 256 byte values is written as one
// printable character, so a piece such as "Ġthe" stands for the bytes " the".
// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves;
// the other 68 bytes (controls, space, DEL, NBSP, soft hyphen) are given the
// code points U+0100 upwards, in byte order.
#include <cstdint>
#include <string>
#include <string_view>

namespace h2o::text {

// The code point that stands for byte `b`.
char32_t byte_to_codepoint(uint8_t b);
// The same as UTF-8 (one or two bytes).
const std::string& byte_to_utf8(uint8_t b);
// The byte a code point stands for, or -1 if it is not in the alphabet.
int codepoint_to_byte(char32_t cp);

// Raw bytes -> their byte-level text ("a b" -> "aĠb").
std::string bytes_to_byte_level(std::string_view bytes);
// Byte-level text -> the raw bytes it stands for. Characters outside the
// alphabet (and invalid UTF-8) are kept as they are, so no text is lost.
std::string byte_level_to_bytes(std::string_view text);
// The same, appended to `out` (no string per call: used for whole vocabularies).
void append_byte_level_as_bytes(std::string_view text, std::string& out);

}  // namespace h2o::text
