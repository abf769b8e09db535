#include "core/text/nfc.h"

#include <cstdint>

#include "core/text/utf8_stream.h"

#ifdef H2O_HAVE_ICU
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#endif

namespace h2o::text {

#ifdef H2O_HAVE_ICU

bool nfc_available() { return true; }

std::string to_nfc(std::string_view text) {
  // ASCII is NFC already; most prompts are, and this skips ICU for them.
  bool ascii = true;
  for (const char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  // ICU takes int32 lengths; text that large is passed through rather than cut.
  if (ascii || text.size() > INT32_MAX || !is_valid_utf8(text)) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) return std::string(text);
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (nfc->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out);
  nfc->normalizeUTF8(0, piece, sink, nullptr, status);
  return U_SUCCESS(status) ? out : std::string(text);
}

#else

bool nfc_available() { return false; }

std::string to_nfc(std::string_view text) { return std::string(text); }

#endif

}  // namespace h2o::text
