#pragma once
// Byte-level BPE (GPT-2 style, as Llama-3 and Qwen2 use it): text is cut into
// words by the vocabulary's pre-tokenizer regex, each word's bytes are written
// in GPT-2's byte alphabet (byte_unicode.h), and within each word adjacent
// pieces are merged, lowest merge rank first, until no listed merge applies.
//
// The vocabulary comes from a GGUF whose tokenizer.ggml.model is "gpt2"
// (bpe_vocab_from_gguf) or from a Hugging Face tokenizer.json
// (hf_tokenizer_json.h); both fill a BpeVocab and make_bpe_tokenizer checks it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model/model.h"
#include "core/text/tokenizer.h"

namespace h2o::text {

// Piece types, as GGUF's tokenizer.ggml.token_type numbers them. Control and
// user-defined pieces are special tokens: never produced by encode(), found
// by their text in encode_with_specials(). Every other type is a normal piece.
constexpr int kPieceNormal = 1, kPieceControl = 3, kPieceUserDefined = 4;

struct BpeVocab {
  // Normal pieces in the byte alphabet ("Ġthe"); special tokens as written ("<|eot_id|>").
  std::vector<std::string> pieces;
  std::vector<int> types;  // one per piece; empty: all normal
  // Merges, best (lowest rank) first: the two pieces whose concatenation is a
  // piece. A merge that involves a special token's text is dropped, so that
  // encode() can never produce a special token.
  std::vector<std::pair<std::string, std::string>> merges;
  // Or the same as GGUF writes them, "a b" (exactly one space), packed: line i
  // is merge_bytes[merge_ends[i - 1], merge_ends[i]). Used instead of `merges`
  // when not empty, and split only as the tokenizer reads them: a string per
  // merge (280k for Llama-3) cost more memory than the whole file.
  std::string merge_bytes;
  std::vector<uint32_t> merge_ends;
  // Pre-tokenizer regexes (PCRE2 syntax), applied in turn; and a name for describe().
  std::vector<std::string> patterns;
  std::string pre_name;
  bool ignore_merges = false;  // a word that is itself a piece is taken whole (Llama-3)
  bool nfc = false;            // NFC-normalise text before splitting (Qwen2's tokenizer.json)
  int bos_id = -1;
  int eos_id = -1;
  int eot_id = -1;  // -1: found by text (<|eot_id|>, <|im_end|>, ...) among the special tokens, if any
  bool add_bos = false;
  std::string chat_template;  // the model's own (Jinja), "" when its files have none
};

// Checks `vocab` and builds its tokenizer. Throws Error("<source>: ...") with
// one line for every problem: a merge naming a piece the vocabulary lacks, a
// byte with no piece, a special id out of range, a pattern that does not
// compile, a build without PCRE2.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(const BpeVocab& vocab, const std::string& source);

// The vocabulary of a GGUF whose tokenizer.ggml.model is "gpt2", with the
// pre-tokenizer its tokenizer.ggml.pre names: llama-bpe / llama3 / llama-v3
// (Llama-3: BOS added, whole-word pieces taken whole, as llama.cpp does),
// qwen2 (single digits), gpt-2. Throws Error("<what>: ...") naming the key.
BpeVocab bpe_vocab_from_gguf(const EmbeddedVocab& vocab, int bos_id, int eos_id, const std::string& what);
// The same, taking the vocabulary's strings instead of copying them (loading a tokenizer file).
BpeVocab bpe_vocab_from_gguf(EmbeddedVocab&& vocab, int bos_id, int eos_id, const std::string& what);

// The regexes of a pre-tokenizer by its llama.cpp name, if known.
std::optional<std::vector<std::string>> pretokenizer_patterns(const std::string& name);
// GPT-2's own pattern (Hugging Face's ByteLevel pre-tokenizer with use_regex).
const std::string& gpt2_pattern();

// `text` quoted for an error line: at most 40 bytes, control bytes as \xNN.
std::string quote_text(std::string_view text);

}  // namespace h2o::text
