#pragma once
// Text <-> token ids. SentencePiece (from a tokenizer.model file or from the
// vocabulary a GGUF file carries) for real models, and a byte-level tokenizer
// for synthetic models run without a tokenizer file.
#include <memory>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace h2o {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual int vocab_size() const = 0;
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  // Encodes text without BOS/EOS (callers add BOS at the start of a stream).
  virtual std::vector<int> encode(const std::string& text) const = 0;
  // The text of one token as it appears in running text (SentencePiece's
  // word-boundary mark as a space, byte pieces as their byte). `previous` lets
  // a tokenizer drop the leading space after BOS, as llama2.c does.
  virtual std::string piece_text(int id, int previous = -1) const = 0;
  // A short description: "sentencepiece:<file> (32000 pieces)".
  virtual std::string describe() const = 0;
};

// BOS and the ids of `text`: how a stream or a scored text begins.
std::vector<int> encode_with_bos(const Tokenizer& tokenizer, const std::string& text);

// Throws Error("<path>: ...") if the file is missing or not a SentencePiece model.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path);
// From a GGUF's embedded vocabulary; `what` names the file in errors.
std::unique_ptr<Tokenizer> tokenizer_from_vocab(const EmbeddedVocab& vocab, int bos_id, int eos_id,
                                                const std::string& what);
// The serialized SentencePiece ModelProto (a tokenizer.model file's bytes)
// tokenizer_from_vocab builds for `vocab`; used to write small test models.
std::string sentencepiece_model_proto(const EmbeddedVocab& vocab, int bos_id, int eos_id, const std::string& what);
// Bytes as ids 3..258 (0 unk, 1 BOS, 2 EOS); ids past 258 print as "<id>".
std::unique_ptr<Tokenizer> make_byte_tokenizer(int vocab_size);

// The tokenizer for a model: the file given, else the model's own vocabulary,
// else a byte tokenizer. Throws Error if the tokenizer's vocabulary does not
// fit the model's (the tokenizer has more pieces than the model has rows).
std::unique_ptr<Tokenizer> tokenizer_for(const Model& model, const std::string& tokenizer_path);

}  // namespace h2o
