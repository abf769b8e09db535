#pragma once
// Hugging Face tokenizer.json files of byte-level BPE models (Llama-3,
// Qwen2, GPT-2) read into a BpeVocab. Other models (WordPiece, Unigram, BPE
// with byte fallback as Llama-2 and Mistral ship) are refused with one line
// naming the file and the type.
#include <string>

#include "core/text/bpe_tokenizer.h"

namespace h2o::text {

// Reads `path` (and tokenizer_config.json beside it, when present, for the
// BOS / EOS tokens and add_bos_token). Throws Error("<file>: ...").
BpeVocab read_hf_tokenizer_json(const std::string& path);

// The chat template of the tokenizer_config.json beside `tokenizer_path`
// ("" when there is none or it names none): Llama-2-family folders pair it
// with a SentencePiece tokenizer.model. Throws Error naming a malformed file.
std::string chat_template_beside(const std::string& tokenizer_path);

}  // namespace h2o::text
