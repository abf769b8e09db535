#pragma once
// Unicode NFC normalisation, which some Hugging Face tokenizers apply before
// splitting (Qwen2's tokenizer.json: "normalizer": {"type": "NFC"}). Backed by
// ICU; builds without it report nfc_available() false, and a tokenizer that
// needs NFC refuses to load there rather than encode differently.
#include <string>
#include <string_view>

namespace h2o::text {

bool nfc_available();
// `text` in NFC. Text that is not valid UTF-8 (which no Hugging Face
// tokenizer accepts) is returned unchanged, so no byte is lost.
std::string to_nfc(std::string_view text);

}  // namespace h2o::text
