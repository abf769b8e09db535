#pragma once
// Text <-> token ids. SentencePiece (from a tokenizer.model file or from the
// vocabulary a GGUF file carries) and byte-level BPE (Llama-3, Qwen2: from a
// GGUF's "gpt2" vocabulary or a Hugging Face tokenizer.json) for real models,
// and a byte tokenizer for synthetic models run without a tokenizer file.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <string_view>
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
  // Byte-level BPE pieces are raw bytes that may end mid-character: show
  // running text through text::Utf8Stream (core/text/utf8_stream.h).
  virtual std::string piece_text(int id, int previous = -1) const = 0;
  // A short description: "sentencepiece:<file> (32000 pieces)".
  virtual std::string describe() const = 0;

  // Whether a prompt starts with BOS for this vocabulary, as llama.cpp decides
  // it: the file's add_bos_token where it has one, else yes for SentencePiece
  // and Llama-3, no for Qwen2.
  virtual bool adds_bos() const { return true; }
  // The end-of-turn token (<|eot_id|>, <|im_end|>), or -1 if there is none.
  virtual int eot_id() const { return -1; }
  // Special tokens (control and user-defined pieces) by their exact text, for
  // chat templates: the id of the one whose text is `text`, or -1.
  virtual int special_id(const std::string& text) const {
    (void)text;
    return -1;
  }
  // Template text cut at the special tokens it names ("<|eot_id|>"): plain
  // runs (id -1) and special tokens, left to right.
  struct Segment {
    std::string text;
    int id = -1;
  };
  virtual std::vector<Segment> split_specials(const std::string& text) const { return {{text, -1}}; }
  // Encodes template text: its special tokens' texts as those tokens, each
  // run between them as encode() does. Never use it on user text (encode()
  // keeps such strings as text).
  std::vector<int> encode_with_specials(const std::string& text) const;
  // The model's own chat template (Jinja) as its files carry it (GGUF's
  // tokenizer.chat_template, tokenizer_config.json's chat_template), or "".
  virtual std::string chat_template() const { return ""; }

  // Where a long text may be cut so that its two sides, encoded apart, give
  // exactly the ids of the whole: the first such place at or after `from`, as
  // the end of the left side and the start of the right one (which may skip a
  // space that SentencePiece's dummy prefix puts back). None where the
  // tokenizer cannot be sure; then a text is encoded in one piece.
  struct Cut {
    size_t left_end = 0, right_begin = 0;
  };
  virtual std::optional<Cut> next_cut(std::string_view text, size_t from) const {
    (void)text;
    (void)from;
    return std::nullopt;
  }
};

// encode(), a part of about `part_bytes` at a time (cut where next_cut allows),
// so that a 50 MB text needs memory for one part's words at a time and a
// caller can say how far it got: `progress(bytes done, bytes in all)` after
// each part. The ids are the same as encode(text)'s.
using EncodeProgress = std::function<void(size_t done, size_t total)>;
std::vector<int> encode_in_parts(const Tokenizer& tokenizer, std::string_view text, const EncodeProgress& progress,
                                 size_t part_bytes = size_t(256) << 10);
// The same parts handed to `sink` as each is encoded, in order, so that a
// caller that prints them or needs only the first ids never holds them all;
// the sink returns false to stop there. `progress` follows each part.
using EncodeSink = std::function<bool(std::span<const int> ids)>;
void encode_parts(const Tokenizer& tokenizer, std::string_view text, const EncodeSink& sink,
                  const EncodeProgress& progress, size_t part_bytes = size_t(256) << 10);

// BOS (when the vocabulary adds one: Tokenizer::adds_bos) and the ids of
// `text`: how a stream or a scored text begins.
std::vector<int> encode_with_bos(const Tokenizer& tokenizer, const std::string& text);

// Any tokenizer file, told apart by its contents: a GGUF (its vocabulary; a
// vocabulary-only file will do), a Hugging Face tokenizer.json, else a
// SentencePiece tokenizer.model. Throws Error("<path>: ...").
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);
// Throws Error("<path>: ...") if the file is missing or not a SentencePiece model.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path);
// A Hugging Face tokenizer.json of a byte-level BPE model (Llama-3, Qwen2);
// BOS/EOS from tokenizer_config.json beside it when there is one.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& path);
// From a GGUF's embedded vocabulary, by its type ("llama": SentencePiece,
// "gpt2": byte-level BPE); `what` names the file in errors.
std::unique_ptr<Tokenizer> tokenizer_from_vocab(const EmbeddedVocab& vocab, int bos_id, int eos_id,
                                                const std::string& what);
// The vocabulary a tokenizer file holds, as a GGUF embeds it (`h2o-cli convert --tokenizer`): a
// GGUF's own, or a SentencePiece model's pieces, scores, types and settings. Throws Error naming the
// file for one that cannot be embedded (a Hugging Face tokenizer.json: give a GGUF vocabulary instead).
GgufVocab vocab_of_tokenizer_file(const std::string& path);
GgufVocab sentencepiece_vocab(const std::string& path);
// The SentencePiece half of tokenizer_from_vocab.
std::unique_ptr<Tokenizer> sentencepiece_from_vocab(const EmbeddedVocab& vocab, int bos_id, int eos_id,
                                                    const std::string& what);
// The serialized SentencePiece ModelProto (a tokenizer.model file's bytes)
// tokenizer_from_vocab builds for `vocab`; used to write small test models.
std::string sentencepiece_model_proto(const EmbeddedVocab& vocab, int bos_id, int eos_id, const std::string& what);
// Bytes as ids 3..258 (0 unk, 1 BOS, 2 EOS); ids past 258 print as "<id>".
std::unique_ptr<Tokenizer> make_byte_tokenizer(int vocab_size);

// The tokenizer for a model: the file given, else the model's own vocabulary
// (GGUF), else the tokenizer.json / tokenizer.model beside a safetensors
// model, else a byte tokenizer. Throws Error if the tokenizer's vocabulary does not
// fit the model's (the tokenizer has more pieces than the model has rows).
std::unique_ptr<Tokenizer> tokenizer_for(const Model& model, const std::string& tokenizer_path);
// Empty, or one line naming a tokenizer far smaller than the model's vocabulary (both sizes): the
// model runs, but what it samples past the tokenizer's pieces cannot be shown as text.
std::string tokenizer_mismatch(const Model& model, const Tokenizer& tokenizer, const std::string& tokenizer_path);
// Empty, or one line saying a trained model has no tokenizer at all — none given, none of its own or
// beside it (a llama2.c .bin) — so that only its byte ids show as text. The app's banner says it (a
// model opened from the window without its tokenizer streamed "<1991><270>…" unexplained).
std::string no_tokenizer_warning(const Model& model, const std::string& tokenizer_path);

}  // namespace h2o
