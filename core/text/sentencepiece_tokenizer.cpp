// SentencePiece tokenizers: from a tokenizer.model file, or from the vocabulary
// a GGUF file carries. Only built when libsentencepiece is present (see
// core/CMakeLists.txt); tokenizer.cpp has the stubs for builds without it.
//
// Debian's libsentencepiece-dev ships no sentencepiece_model.pb.h, so an
// embedded vocabulary is turned into a model by writing the ModelProto in
// protobuf wire format here (ProtoWriter) and handing the bytes to
// SentencePieceProcessor::LoadFromSerializedProto.
#include <sentencepiece_processor.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "core/base/error.h"
#include "core/text/hf_tokenizer_json.h"
#include "core/text/special_tokens.h"
#include "core/text/tokenizer.h"

namespace h2o {
namespace {

// SentencePiece piece types (sentencepiece_model.proto, SentencePiece.Type);
// GGUF's tokenizer.ggml.token_type uses the same numbers.
enum PieceType : int { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// ---------------------------------------------------------------------------
// A minimal protobuf wire-format writer: just the three wire types ModelProto
// needs. Fields are written in any order; protobuf readers accept that.
class ProtoWriter {
 public:
  void varint_field(int field, uint64_t value) {
    tag(field, 0);
    varint(value);
  }
  // int32 fields are sign-extended to 64 bits on the wire (so -1 is 10 bytes).
  void int32_field(int field, int32_t value) { varint_field(field, static_cast<uint64_t>(static_cast<int64_t>(value))); }
  void bool_field(int field, bool value) { varint_field(field, value ? 1 : 0); }
  void float_field(int field, float value) {
    tag(field, 5);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // little-endian
  }
  void bytes_field(int field, const std::string& value) {
    tag(field, 2);
    varint(value.size());
    bytes_ += value;
  }
  void message_field(int field, const ProtoWriter& message) { bytes_field(field, message.bytes_); }

  const std::string& bytes() const { return bytes_; }

 private:
  void tag(int field, int wire_type) { varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type)); }
  void varint(uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }

  std::string bytes_;
};

// Field numbers of sentencepiece_model.proto that the embedded-vocabulary
// model sets; everything else keeps the proto's defaults.
namespace field {
constexpr int kModelPieces = 1, kModelTrainerSpec = 2, kModelNormalizerSpec = 3;
constexpr int kPiecePiece = 1, kPieceScore = 2, kPieceType = 3;
constexpr int kTrainerModelType = 3, kTrainerVocabSize = 4, kTrainerByteFallback = 35;
constexpr int kTrainerUnkId = 40, kTrainerBosId = 41, kTrainerEosId = 42, kTrainerPadId = 43;
constexpr int kTrainerUnkPiece = 45, kTrainerBosPiece = 46, kTrainerEosPiece = 47;
constexpr int kNormalizerName = 1, kNormalizerAddDummyPrefix = 3, kNormalizerRemoveExtraWhitespaces = 4,
              kNormalizerEscapeWhitespaces = 5;
}  // namespace field
constexpr int kModelTypeBpe = 2;

// ---------------------------------------------------------------------------
// Piece text, as llama2.c prints it.

// "<0xAB>" -> 0xAB; -1 for anything else.
int byte_piece_value(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = piece[static_cast<size_t>(i)];
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return -1;
    value = value * 16 + digit;
  }
  return value;
}

// SentencePiece marks word starts with U+2581 LOWER ONE EIGHTH BLOCK.
std::string spaces_for_marks(const std::string& piece) {
  static const std::string mark = "\xE2\x96\x81";
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, mark.size(), mark) == 0) {
      out.push_back(' ');
      i += mark.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

std::string text_of_piece(const std::string& piece, int type) {
  switch (type) {
    case kControl:
      return "";  // BOS/EOS and friends have no surface text
    case kUnknown:
      return " \xE2\x81\x87 ";  // SentencePiece's own surface for <unk>: " ⁇ "
    case kByte: {
      const int byte = byte_piece_value(piece);
      if (byte >= 0) return std::string(1, static_cast<char>(byte));
      return piece;
    }
    default:
      return spaces_for_marks(piece);
  }
}

int piece_type(const sentencepiece::SentencePieceProcessor& sp, int id) {
  if (sp.IsControl(id)) return kControl;
  if (sp.IsUnknown(id)) return kUnknown;
  if (sp.IsByte(id)) return kByte;
  if (sp.IsUnused(id)) return kUnused;
  return kNormal;  // normal and user-defined pieces print alike
}

// "<id>" for ids without text. Built by appending: GCC 12 warns falsely
// (-Wrestrict) on "<" + std::to_string(id).
std::string id_placeholder(int id) {
  std::string text = "<";
  text += std::to_string(id);
  text += '>';
  return text;
}

// Status messages are for a one-line error: no newlines, not unbounded.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  constexpr size_t kMax = 200;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

// What a failed status says, for a user. A file that is not a protobuf at all
// (the usual case: a model checkpoint, a text file) reports a source location
// and a C++ expression; say that in words instead.
std::string status_text(const sentencepiece::util::Status& status) {
  const std::string message = status.error_message();
  if (message.find("ParseFromArray") != std::string::npos) return "it does not parse as a ModelProto";
  return one_line(status.ToString());
}

// SentencePiece reports most problems as a Status, but some model files make
// its trie builder (darts-clone) throw instead, e.g. on an empty piece; found
// by fuzzing (tests/data/regressions/sentencepiece/). Turns those into the
// usual one-line Error naming the file.
template <typename Call>
sentencepiece::util::Status guarded(const std::string& what, Call call) {
  try {
    return call();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(what, "not a usable SentencePiece model (" + one_line(e.what()) + ")");
  }
}

// ---------------------------------------------------------------------------

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // `add_bos` and `eot` come from a GGUF's vocabulary; a tokenizer.model has
  // neither (Llama-2 prompts start with BOS; it has no end-of-turn token).
  SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, int bos, int eos,
                         std::string source, bool add_bos = true, int eot = -1, std::string chat_template = "")
      : sp_(std::move(sp)), bos_(bos), eos_(eos), eot_(eot), add_bos_(add_bos), source_(std::move(source)),
        chat_template_(std::move(chat_template)) {
    // Precomputed once: piece_text is called per generated token.
    const int n = sp_->GetPieceSize();
    texts_.reserve(static_cast<size_t>(n));
    for (int id = 0; id < n; ++id) {
      const int type = piece_type(*sp_, id);
      texts_.push_back(text_of_piece(sp_->IdToPiece(id), type));
      // Control pieces (<s>, </s>) are what chat templates name; user-defined
      // pieces SentencePiece already keeps whole when it encodes.
      if (type == kControl) specials_.add(sp_->IdToPiece(id), id);
    }
  }

  int vocab_size() const override { return static_cast<int>(texts_.size()); }
  int bos_id() const override { return bos_; }
  int eos_id() const override { return eos_; }
  int eot_id() const override { return eot_; }
  bool adds_bos() const override { return add_bos_; }
  int special_id(const std::string& text) const override { return specials_.find(text); }

  // Each run of text between special tokens is encoded on its own, dummy
  // prefix included, as llama.cpp does after a special token.
  std::vector<Segment> split_specials(const std::string& text) const override { return text::split_at(specials_, text); }
  std::string chat_template() const override { return chat_template_; }

  std::vector<int> encode(const std::string& text) const override {
    std::vector<int> ids;
    const auto status = guarded(source_, [&] { return sp_->Encode(text, &ids); });
    if (!status.ok()) fail(source_, "cannot encode text (" + status_text(status) + ")");
    return ids;
  }

  std::string piece_text(int id, int previous) const override {
    // Ids the model has but the tokenizer lacks (model vocab may be larger).
    if (id < 0 || id >= vocab_size()) return id_placeholder(id);
    const std::string& text = texts_[static_cast<size_t>(id)];
    // The dummy-prefix space of the first word is not part of the text.
    if (previous == bos_ && !text.empty() && text.front() == ' ') return text.substr(1);
    return text;
  }

  // Only for vocabularies the engine wrote the model of (GGUF: identity
  // normalizer, whitespace kept) with a dummy prefix, and none of whose pieces
  // has a word mark after another character: there "x y" is "x" then "▁y",
  // and "y" alone gets that same "▁y" from the dummy prefix.
  std::optional<Cut> next_cut(std::string_view text, size_t from) const override {
    if (!space_cuts_) return std::nullopt;
    const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    for (size_t at = from < 1 ? 1 : from; at + 1 < text.size(); ++at)
      if (text[at] == ' ' && letter(text[at - 1]) && letter(text[at + 1])) return Cut{at, at + 1};
    return std::nullopt;
  }
  void allow_space_cuts() { space_cuts_ = true; }

  std::string describe() const override {
    return "sentencepiece:" + source_ + " (" + std::to_string(vocab_size()) + " pieces)";
  }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int bos_;
  int eos_;
  int eot_;
  bool add_bos_;
  std::string source_;
  std::string chat_template_;
  std::vector<std::string> texts_;
  text::SpecialTokens specials_;
  bool space_cuts_ = false;
};

// ---------------------------------------------------------------------------
// Embedded vocabulary -> serialized ModelProto.

int inferred_type(const EmbeddedVocab& vocab, size_t id, int bos_id, int eos_id) {
  const int i = static_cast<int>(id);
  if (i == vocab.unk_id) return kUnknown;
  if (i == bos_id || i == eos_id) return kControl;
  if (byte_piece_value(vocab.pieces[id]) >= 0) return kByte;
  return kNormal;
}

// The types to write: the file's own where it has them (GGUF's 0 "undefined"
// and out-of-range values read as normal), else inferred from the pieces.
std::vector<int> piece_types(const EmbeddedVocab& vocab, int bos_id, int eos_id) {
  std::vector<int> types(vocab.pieces.size());
  for (size_t id = 0; id < types.size(); ++id) {
    if (vocab.types.empty()) {
      types[id] = inferred_type(vocab, id, bos_id, eos_id);
    } else {
      const int t = vocab.types[id];
      types[id] = (t >= kNormal && t <= kByte) ? t : kNormal;
    }
  }
  return types;
}

void check_vocab(const EmbeddedVocab& vocab, int bos_id, int eos_id, const std::string& what) {
  if (!vocab.model.empty() && vocab.model != "llama")
    fail(what, "its vocabulary is of type '" + vocab.model + "', not SentencePiece ('llama'): give a tokenizer file");
  const size_t n = vocab.pieces.size();
  if (n == 0) fail(what, "its embedded vocabulary has no pieces");
  if (!vocab.scores.empty() && vocab.scores.size() != n)
    fail(what, "its vocabulary has " + std::to_string(n) + " pieces but " + std::to_string(vocab.scores.size()) +
                   " scores");
  if (!vocab.types.empty() && vocab.types.size() != n)
    fail(what, "its vocabulary has " + std::to_string(n) + " pieces but " + std::to_string(vocab.types.size()) +
                   " piece types");
  const auto in_range = [n](int id) { return id >= 0 && static_cast<size_t>(id) < n; };
  if (!in_range(vocab.unk_id)) fail(what, "unknown-piece id " + std::to_string(vocab.unk_id) + " is out of range");
  if (!in_range(bos_id)) fail(what, "BOS id " + std::to_string(bos_id) + " is out of range");
  if (!in_range(eos_id)) fail(what, "EOS id " + std::to_string(eos_id) + " is out of range");
}

std::string serialize_model(const EmbeddedVocab& vocab, int bos_id, int eos_id) {
  const std::vector<int> types = piece_types(vocab, bos_id, eos_id);
  ProtoWriter model;
  bool has_byte_pieces = false;
  for (size_t id = 0; id < vocab.pieces.size(); ++id) {
    ProtoWriter piece;
    piece.bytes_field(field::kPiecePiece, vocab.pieces[id]);
    // Without scores, earlier pieces rank higher (BPE merges by score).
    const float score = vocab.scores.empty() ? -static_cast<float>(id) : vocab.scores[id];
    piece.float_field(field::kPieceScore, score);
    piece.varint_field(field::kPieceType, static_cast<uint64_t>(types[id]));
    model.message_field(field::kModelPieces, piece);
    has_byte_pieces = has_byte_pieces || types[id] == kByte;
  }

  // Llama vocabularies are BPE; byte pieces mean byte fallback is on
  // (SentencePiece refuses byte pieces otherwise).
  ProtoWriter trainer;
  trainer.varint_field(field::kTrainerModelType, kModelTypeBpe);
  trainer.int32_field(field::kTrainerVocabSize, static_cast<int32_t>(vocab.pieces.size()));
  trainer.bool_field(field::kTrainerByteFallback, has_byte_pieces);
  trainer.int32_field(field::kTrainerUnkId, vocab.unk_id);
  trainer.int32_field(field::kTrainerBosId, bos_id);
  trainer.int32_field(field::kTrainerEosId, eos_id);
  trainer.int32_field(field::kTrainerPadId, -1);
  // The special pieces by name, so the processor's unk/bos/eos lookups agree
  // with the ids even when a file names them differently from <unk>/<s>/</s>.
  trainer.bytes_field(field::kTrainerUnkPiece, vocab.pieces[static_cast<size_t>(vocab.unk_id)]);
  trainer.bytes_field(field::kTrainerBosPiece, vocab.pieces[static_cast<size_t>(bos_id)]);
  trainer.bytes_field(field::kTrainerEosPiece, vocab.pieces[static_cast<size_t>(eos_id)]);
  model.message_field(field::kModelTrainerSpec, trainer);

  // GGUF carries no normalization rules: text goes in as is (as Llama's own
  // tokenizer.model does, whose normalizer is "identity" too).
  ProtoWriter normalizer;
  normalizer.bytes_field(field::kNormalizerName, "identity");
  normalizer.bool_field(field::kNormalizerAddDummyPrefix, vocab.add_space_prefix);
  normalizer.bool_field(field::kNormalizerRemoveExtraWhitespaces, false);
  normalizer.bool_field(field::kNormalizerEscapeWhitespaces, true);
  model.message_field(field::kModelNormalizerSpec, normalizer);
  return model.bytes();
}

// Whether a word mark (U+2581) follows some other character in a piece, as
// in "a▁b": then a cut at a space could split what one piece would cover.
bool mark_inside_a_piece(const std::vector<std::string>& pieces) {
  static const std::string mark = "\xE2\x96\x81";
  for (const std::string& piece : pieces)
    for (size_t at = piece.find(mark, 1); at != std::string::npos; at = piece.find(mark, at + 1))
      if (at < mark.size() || piece.compare(at - mark.size(), mark.size(), mark) != 0) return true;
  return false;
}

// Whether a tokenizer.model file may be cut at a space between two letters (next_cut), as a GGUF's
// vocabulary is: no piece has a word mark after another character (so no piece spans "x▁y"), and
// a word alone gets its word mark from the dummy prefix ("y" encodes as "x y" ends). Its normalizer
// cannot undo that: NFKC and whitespace folding act within each side of a space between letters.
// Without the cuts a 47 MB text was one SentencePiece call: 96 s and 4 GB.
bool space_cuts_hold(const sentencepiece::SentencePieceProcessor& sp) {
  std::vector<std::string> pieces(static_cast<size_t>(sp.GetPieceSize()));
  for (size_t id = 0; id < pieces.size(); ++id) pieces[id] = sp.IdToPiece(int(id));
  if (mark_inside_a_piece(pieces)) return false;
  for (const char* word : {"y", "word", "The"}) {
    std::vector<int> alone, after;
    if (!sp.Encode(word, &alone).ok() || !sp.Encode(std::string("x ") + word, &after).ok()) return false;
    if (alone.empty() || after.size() < alone.size() || !std::equal(alone.rbegin(), alone.rend(), after.rbegin())) return false;
  }
  return true;
}

// Refuses what SentencePiece would load but the engine cannot use.
void check_special_ids(int bos, int eos, const std::string& path) {
  if (bos < 0) fail(path, "SentencePiece model has no BOS piece, which the engine needs to start a prompt");
  if (eos < 0) fail(path, "SentencePiece model has no EOS piece");
}

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path) {
  // Checked here so the message says what is wrong rather than a parse error.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a folder, not a SentencePiece model file");
  // An empty file parses as an empty ModelProto, so refuse it by size.
  if (std::filesystem::file_size(path, ec) == 0 && !ec) fail(path, "not a SentencePiece model (empty file)");

  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = guarded(path, [&] { return sp->Load(path); });
  if (!status.ok()) fail(path, "not a SentencePiece model (" + status_text(status) + ")");
  if (sp->GetPieceSize() <= 0) fail(path, "not a SentencePiece model (no pieces)");
  const int bos = sp->bos_id();
  const int eos = sp->eos_id();
  check_special_ids(bos, eos, path);
  const bool cuts = space_cuts_hold(*sp);
  // A Hugging Face folder's tokenizer_config.json beside it may name the chat template.
  auto tokenizer = std::make_unique<SentencePieceTokenizer>(std::move(sp), bos, eos, path, true, -1,
                                                            text::chat_template_beside(path));
  if (cuts) tokenizer->allow_space_cuts();
  return tokenizer;
}

GgufVocab sentencepiece_vocab(const std::string& path) {
  // The same checks and messages as loading it for tokenizing.
  const std::unique_ptr<Tokenizer> checked = load_sentencepiece(path);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  if (!guarded(path, [&] { return sp->Load(path); }).ok()) fail(path, "not a SentencePiece model");
  GgufVocab out;
  EmbeddedVocab& v = out.vocab;
  v.model = "llama";
  for (int id = 0; id < sp->GetPieceSize(); ++id) {
    v.pieces.push_back(sp->IdToPiece(id));
    v.scores.push_back(sp->GetScore(id));
    v.types.push_back(piece_type(*sp, id));
  }
  v.unk_id = sp->unk_id() >= 0 ? sp->unk_id() : 0;
  // The dummy prefix is a normalizer setting the library does not expose: a word alone shows it.
  const std::vector<std::string> word = sp->EncodeAsPieces("a");
  v.add_space_prefix = !word.empty() && word.front().rfind("\xE2\x96\x81", 0) == 0;
  v.chat_template = text::chat_template_beside(path);
  out.bos_id = sp->bos_id();
  out.eos_id = sp->eos_id();
  return out;
}

std::string sentencepiece_model_proto(const EmbeddedVocab& vocab, int bos_id, int eos_id, const std::string& what) {
  check_vocab(vocab, bos_id, eos_id, what);
  return serialize_model(vocab, bos_id, eos_id);
}

std::unique_ptr<Tokenizer> sentencepiece_from_vocab(const EmbeddedVocab& vocab, int bos_id, int eos_id,
                                                    const std::string& what) {
  check_vocab(vocab, bos_id, eos_id, what);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = guarded(what, [&] { return sp->LoadFromSerializedProto(serialize_model(vocab, bos_id, eos_id)); });
  if (!status.ok())
    fail(what, "its embedded vocabulary is not a usable SentencePiece model (" + status_text(status) + ")");
  if (vocab.eot_id >= sp->GetPieceSize()) fail(what, "end-of-turn id " + std::to_string(vocab.eot_id) + " is out of range");
  auto tokenizer = std::make_unique<SentencePieceTokenizer>(std::move(sp), bos_id, eos_id, what,
                                                            vocab.add_bos.value_or(true), vocab.eot_id, vocab.chat_template);
  if (vocab.add_space_prefix && !mark_inside_a_piece(vocab.pieces)) tokenizer->allow_space_cuts();
  return tokenizer;
}

}  // namespace h2o
