// Which tokenizer a file or an embedded vocabulary needs: told apart by
// contents (GGUF magic, a JSON object) and by the vocabulary's type, so a
// file's name never matters.
#include <cstring>
#include <fstream>

#include "core/base/error.h"
#include "core/text/tokenizer.h"
#include "core/text/bpe_tokenizer.h"

namespace h2o {
namespace {

enum class FileKind { kGguf, kJson, kOther };

// The first bytes decide; files that cannot be read are left to the
// SentencePiece loader, whose messages say why (missing, a folder, empty).
FileKind file_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof head);  // a shorter file sets gcount to what it had
  const auto n = static_cast<size_t>(in.gcount());
  if (n >= 4 && std::memcmp(head, "GGUF", 4) == 0) return FileKind::kGguf;
  // A UTF-8 byte-order mark before JSON is accepted (and skipped by the JSON parser), as editors write one.
  const size_t start = n >= 3 && std::memcmp(head, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  for (size_t i = start; i < n; ++i) {
    const char c = head[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' ? FileKind::kJson : FileKind::kOther;
  }
  return FileKind::kOther;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  switch (file_kind(path)) {
    case FileKind::kGguf: {
      GgufVocab v = load_gguf_vocab(path);
      // Byte-level BPE takes the strings over rather than copying 10^5 of them.
      if (v.vocab.model == "gpt2")
        return text::make_bpe_tokenizer(text::bpe_vocab_from_gguf(std::move(v.vocab), v.bos_id, v.eos_id, path), path);
      return tokenizer_from_vocab(v.vocab, v.bos_id, v.eos_id, path);
    }
    case FileKind::kJson:
      return load_hf_tokenizer(path);
    case FileKind::kOther:
      break;
  }
  return load_sentencepiece(path);
}

GgufVocab vocab_of_tokenizer_file(const std::string& path) {
  switch (file_kind(path)) {
    case FileKind::kGguf:
      return load_gguf_vocab(path);
    case FileKind::kJson:
      fail(path, "a Hugging Face tokenizer.json cannot be written into a GGUF here; give a GGUF vocabulary "
                 "(--vocab, e.g. one of llama.cpp's ggml-vocab-*.gguf) or a SentencePiece .model");
    case FileKind::kOther:
      break;
  }
  return sentencepiece_vocab(path);
}

std::unique_ptr<Tokenizer> tokenizer_from_vocab(const EmbeddedVocab& vocab, int bos_id, int eos_id,
                                                const std::string& what) {
  if (vocab.model.empty() || vocab.model == "llama") return sentencepiece_from_vocab(vocab, bos_id, eos_id, what);
  if (vocab.model == "gpt2") return text::make_bpe_tokenizer(text::bpe_vocab_from_gguf(vocab, bos_id, eos_id, what), what);
  fail(what, "its vocabulary is of type " + text::quote_text(vocab.model) +
                 ", which is not supported (llama: SentencePiece, gpt2: byte-level BPE)");
}

}  // namespace h2o
