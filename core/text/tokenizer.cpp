// The byte-level tokenizer for synthetic models, the choice of tokenizer for a
// model, and stand-ins for the SentencePiece loaders in builds without
// libsentencepiece (the real ones are in sentencepiece_tokenizer.cpp).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/text/tokenizer.h"

namespace h2o {
namespace {

constexpr int kUnkId = 0;
constexpr int kBosId = 1;
constexpr int kEosId = 2;
constexpr int kFirstByteId = 3;
constexpr int kByteIds = 256;
// 0 unk, 1 BOS, 2 EOS and one id per byte value.
constexpr int kFullByteVocab = kFirstByteId + kByteIds;  // 259

// "<id>" for ids without text. Built by appending: GCC 12 warns falsely
// (-Wrestrict) on "<" + std::to_string(id).
std::string id_placeholder(int id) {
  std::string text = "<";
  text += std::to_string(id);
  text += '>';
  return text;
}

// Bytes as ids 3..258, so any text round-trips without a tokenizer file.
//
// A vocabulary smaller than 259 cannot give each byte its own id; there byte b
// is encoded as id 3 + b % (vocab - 3), so encoding still yields valid ids for
// the model, but decoding is lossy (id 3 + k prints as byte k). That only
// matters for toy shapes: real-shaped synthetic models have 512 or 32000.
class ByteTokenizer final : public Tokenizer {
 public:
  explicit ByteTokenizer(int vocab_size) : vocab_size_(vocab_size) {}

  int vocab_size() const override { return vocab_size_; }
  int bos_id() const override { return kBosId; }
  int eos_id() const override { return kEosId; }

  std::vector<int> encode(const std::string& text) const override {
    const int byte_ids = byte_id_count();
    std::vector<int> ids;
    ids.reserve(text.size());
    for (const char c : text) ids.push_back(kFirstByteId + static_cast<unsigned char>(c) % byte_ids);
    return ids;
  }

  std::string piece_text(int id, int /*previous*/) const override {
    // No dummy-prefix space is added on encoding, so none is dropped after BOS.
    if (id == kBosId || id == kEosId) return "";
    if (id == kUnkId) return "<unk>";
    if (id >= kFirstByteId && id < kFirstByteId + byte_id_count())
      return std::string(1, static_cast<char>(id - kFirstByteId));
    return id_placeholder(id);  // ids the model has beyond the bytes
  }

  std::string describe() const override {
    std::string text = "bytes (vocabulary " + std::to_string(vocab_size_) + ": 0 unk, 1 BOS, 2 EOS, bytes from 3";
    if (vocab_size_ < kFullByteVocab) text += ", folded modulo " + std::to_string(byte_id_count());
    return text + ")";
  }

 private:
  int byte_id_count() const { return vocab_size_ < kFullByteVocab ? vocab_size_ - kFirstByteId : kByteIds; }

  int vocab_size_;
};

// The file a tokenizer came from, for error messages.

// A Hugging Face model folder keeps its tokenizer beside the weights: a
// SentencePiece tokenizer.model (Llama-2, Mistral, TinyLlama: their
// tokenizer.json is BPE with byte fallback, which the tokenizer.json reader
// refuses), else tokenizer.json (Llama-3, Qwen2). Either takes the chat
// template of tokenizer_config.json beside it. "" when there is neither.
std::string tokenizer_beside(const Model& model) {
  if (model.format != "safetensors") return {};
  std::error_code ec;
  const std::filesystem::path p(model.path);
  const std::filesystem::path folder = std::filesystem::is_directory(p, ec) ? p : p.parent_path();
  for (const char* name : {"tokenizer.model", "tokenizer.json"})
    if (std::filesystem::is_regular_file(folder / name, ec)) return (folder / name).string();
  return {};
}

// The file the tokenizer came from, as errors name it.
std::string tokenizer_source(const Model& model, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty()) return tokenizer_path;
  if (!model.vocab)
    if (std::string beside = tokenizer_beside(model); !beside.empty()) return beside;
  return model.path.empty() ? std::string("model") : model.path;
}

std::unique_ptr<Tokenizer> choose_tokenizer(const Model& model, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty()) return load_tokenizer(tokenizer_path);
  if (model.vocab) return tokenizer_from_vocab(*model.vocab, model.config.bos_id, model.config.eos_id, model.path);
  if (const std::string beside = tokenizer_beside(model); !beside.empty()) return load_tokenizer(beside);
  return make_byte_tokenizer(model.config.vocab_size);
}

}  // namespace

std::vector<int> Tokenizer::encode_with_specials(const std::string& text) const {
  std::vector<int> ids;
  for (const Segment& segment : split_specials(text)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else {
      const std::vector<int> plain = encode(segment.text);
      ids.insert(ids.end(), plain.begin(), plain.end());
    }
  }
  return ids;
}

std::vector<int> encode_with_bos(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int> ids;
  if (tokenizer.adds_bos()) ids.push_back(tokenizer.bos_id());
  const auto rest = tokenizer.encode(text);
  ids.insert(ids.end(), rest.begin(), rest.end());
  return ids;
}

std::unique_ptr<Tokenizer> make_byte_tokenizer(int vocab_size) {
  // Needs the three special ids and at least one id for bytes.
  if (vocab_size <= kFirstByteId)
    fail("byte tokenizer", "a vocabulary of " + std::to_string(vocab_size) + " ids is too small (needs at least " +
                               std::to_string(kFirstByteId + 1) + ")");
  return std::make_unique<ByteTokenizer>(vocab_size);
}

std::unique_ptr<Tokenizer> tokenizer_for(const Model& model, const std::string& tokenizer_path) {
  auto tokenizer = choose_tokenizer(model, tokenizer_path);
  // A tokenizer with more pieces than the model has embedding rows would feed
  // it out-of-range ids. Fewer is fine (the extra rows are never produced by
  // encode, and print as "<id>" when sampled).
  if (tokenizer->vocab_size() > model.config.vocab_size)
    fail(tokenizer_source(model, tokenizer_path),
         "has " + std::to_string(tokenizer->vocab_size()) + " pieces but the model's vocabulary has " +
             std::to_string(model.config.vocab_size) + ": wrong tokenizer for this model?");
  return tokenizer;
}

std::string tokenizer_mismatch(const Model& model, const Tokenizer& tokenizer, const std::string& tokenizer_path) {
  const int pieces = tokenizer.vocab_size(), rows = model.config.vocab_size;
  // Models pad their vocabulary (Pythia 50277 pieces to 50304 rows, Qwen2 to a multiple of 128):
  // a tenth short is padding, more is another model's tokenizer.
  if (int64_t(pieces) * 10 >= int64_t(rows) * 9) return {};
  return tokenizer_source(model, tokenizer_path) + " has " + std::to_string(pieces) +
         " pieces but the model's vocabulary has " + std::to_string(rows) + ": ids past " + std::to_string(pieces - 1) +
         " show as <id> — wrong tokenizer for this model?";
}

std::string no_tokenizer_warning(const Model& model, const std::string& tokenizer_path) {
  const int rows = model.config.vocab_size, bytes_end = kFirstByteId + 256;
  if (!tokenizer_path.empty() || model.vocab || !tokenizer_beside(model).empty() || model.format == "synthetic" ||
      rows <= bytes_end)
    return {};
  return model.path + " has no tokenizer of its own and none was given: only its byte ids show as text, the other " +
         std::to_string(rows - bytes_end) + " as <id> — choose its tokenizer (a .model or tokenizer.json) in the controls";
}

#ifndef H2O_HAVE_SENTENCEPIECE
// Builds without libsentencepiece still link; asking for SentencePiece fails
// with a message that says why.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path) {
  fail(path, "this build has no SentencePiece support");
}

std::unique_ptr<Tokenizer> sentencepiece_from_vocab(const EmbeddedVocab& /*vocab*/, int /*bos_id*/, int /*eos_id*/,
                                                    const std::string& what) {
  fail(what, "this build has no SentencePiece support");
}

std::string sentencepiece_model_proto(const EmbeddedVocab& /*vocab*/, int /*bos_id*/, int /*eos_id*/,
                                      const std::string& what) {
  fail(what, "this build has no SentencePiece support");
}
#endif

}  // namespace h2o
