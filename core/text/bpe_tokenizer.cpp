// The byte-level BPE tokenizer (see bpe_tokenizer.h).
//
// Merging runs on token ids, not strings: each merge is looked up by the pair
// of ids it joins, and a word is merged with a priority queue of candidate
// pairs (lowest rank first, leftmost on ties, as Hugging Face and llama.cpp
// both do), so a long word costs O(n log n), never a rescan per merge.
#include "core/text/bpe_tokenizer.h"

#include <cstdint>
#include <cstdio>
#include <queue>

#include "core/base/error.h"
#include "core/text/byte_unicode.h"
#include "core/text/merge_table.h"
#include "core/text/nfc.h"
#include "core/text/piece_table.h"
#include "core/text/pretokenizer.h"
#include "core/text/special_tokens.h"

namespace h2o::text {
namespace {

// Texts llama.cpp recognises as end-of-turn when a file names none.
const char* const kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"};

std::string id_placeholder(int id) {
  std::string text = "<";
  text += std::to_string(id);
  text += '>';
  return text;
}

bool is_special(int type) { return type == kPieceControl || type == kPieceUserDefined; }

// Bytes no valid UTF-8 text holds: overlong lead bytes and leads past U+10FFFF.
bool never_in_utf8(uint8_t b) { return b == 0xC0 || b == 0xC1 || b >= 0xF5; }

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(const BpeVocab& vocab, const std::string& source);

  int vocab_size() const override { return static_cast<int>(text_offsets_.size()) - 1; }
  int bos_id() const override { return bos_; }
  int eos_id() const override { return eos_; }
  int eot_id() const override { return eot_; }
  bool adds_bos() const override { return add_bos_; }

  std::vector<int> encode(const std::string& text) const override {
    std::vector<int> ids;
    if (nfc_) {
      const std::string normalized = to_nfc(text);
      encode_plain(normalized, ids);
    } else {
      encode_plain(text, ids);
    }
    return ids;
  }

  std::vector<Segment> split_specials(const std::string& text) const override { return split_at(specials_, text); }
  std::string chat_template() const override { return chat_template_; }

  int special_id(const std::string& text) const override { return specials_.find(text); }

  // Byte-level BPE has no dummy-prefix space to drop, so `previous` is unused.
  std::optional<Cut> next_cut(std::string_view text, size_t from) const override;

  std::string piece_text(int id, int /*previous*/) const override {
    if (id < 0 || id >= vocab_size()) return id_placeholder(id);
    return std::string(text_of(id));
  }

  std::string describe() const override {
    return "bpe:" + source_ + " (" + std::to_string(vocab_size()) + " pieces, pre-tokenizer " + pre_name_ + ")";
  }

 private:
  struct Candidate {
    int rank;
    int left;  // position of the left symbol in the word
    int left_id, right_id, merged;
    // std::priority_queue pops the largest: the lowest rank, then the leftmost.
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };

  void encode_plain(std::string_view text, std::vector<int>& ids) const {
    for (const std::string_view word : pretokenizer_->split(text)) encode_word(word, ids);
  }

  void encode_word(std::string_view word, std::vector<int>& ids) const;
  // The piece of one byte; throws for a byte the vocabulary has none for.
  int byte_id(uint8_t b) const {
    if (byte_ids_[b] < 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      fail(source_, std::string("the text holds byte ") + hex +
                        ", which valid UTF-8 never does and this vocabulary has no piece for");
    }
    return byte_ids_[b];
  }

  std::string_view text_of(int id) const {
    const size_t from = text_offsets_[size_t(id)], to = text_offsets_[size_t(id) + 1];
    return std::string_view(text_bytes_).substr(from, to - from);
  }
  void add_merges(const BpeVocab& vocab, const std::string& source);

  const Merge* find_merge(int left, int right) const {
    return merges_.find(left, right);
  }

  std::string source_;
  std::string pre_name_;
  // What each id prints as (raw bytes): id i is text_bytes_[text_offsets_[i], text_offsets_[i + 1]).
  // One buffer, not a string per piece: loading is dominated by allocations otherwise.
  std::string text_bytes_;
  std::vector<uint32_t> text_offsets_{0};
  // Normal pieces only: what merges and whole-word lookups can produce, so
  // encode() never yields a special token, whatever its text.
  PieceTable piece_ids_;
  MergeTable merges_;
  int byte_ids_[256] = {};
  SpecialTokens specials_;
  std::unique_ptr<Pretokenizer> pretokenizer_;
  bool ignore_merges_ = false;
  bool known_pattern_ = false;  // one of the three patterns next_cut reasons about
  bool nfc_ = false;
  bool add_bos_ = false;
  std::string chat_template_;
  int bos_ = -1, eos_ = -1, eot_ = -1;
};

BpeTokenizer::BpeTokenizer(const BpeVocab& vocab, const std::string& source)
    : source_(source),
      pre_name_(vocab.pre_name.empty() ? "custom" : vocab.pre_name),
      ignore_merges_(vocab.ignore_merges),
      nfc_(vocab.nfc),
      add_bos_(vocab.add_bos),
      chat_template_(vocab.chat_template) {
  const size_t n = vocab.pieces.size();
  if (n == 0) fail(source, "its vocabulary has no pieces");
  if (n > size_t(INT32_MAX)) fail(source, "its vocabulary has more pieces than ids can number");
  if (!vocab.types.empty() && vocab.types.size() != n)
    fail(source, "its vocabulary has " + std::to_string(n) + " pieces but " + std::to_string(vocab.types.size()) +
                     " piece types");
  const auto type_of = [&](size_t id) { return vocab.types.empty() ? kPieceNormal : vocab.types[id]; };
  const auto check_id = [&](int id, const char* what) {
    if (id == -1) fail(source, std::string(what) + " -1: the vocabulary names no such token");
    if (id < 0 || size_t(id) >= n)
      fail(source, std::string(what) + " " + std::to_string(id) + " is outside the vocabulary's " + std::to_string(n) +
                       " pieces");
  };
  check_id(vocab.bos_id, "BOS id");
  check_id(vocab.eos_id, "EOS id");
  if (vocab.eot_id != -1) check_id(vocab.eot_id, "end-of-turn id");
  bos_ = vocab.bos_id;
  eos_ = vocab.eos_id;
  eot_ = vocab.eot_id;

  size_t piece_bytes = 0;
  for (const std::string& piece : vocab.pieces) piece_bytes += piece.size();
  text_bytes_.reserve(piece_bytes);
  text_offsets_.reserve(n + 1);
  piece_ids_.reserve(n, piece_bytes);
  for (size_t id = 0; id < n; ++id) {
    const std::string& piece = vocab.pieces[id];
    const int type = type_of(id);
    if (is_special(type)) specials_.add(piece, static_cast<int>(id));
    else piece_ids_.add(piece, static_cast<int>(id));  // the first of duplicate pieces keeps the text
    // Control tokens have no surface text; user-defined ones print as written.
    if (type == kPieceUserDefined) text_bytes_ += piece;
    else if (type != kPieceControl) append_byte_level_as_bytes(piece, text_bytes_);
    if (text_bytes_.size() > UINT32_MAX) fail(source, "its pieces exceed 4 GiB of text");
    text_offsets_.push_back(static_cast<uint32_t>(text_bytes_.size()));
  }
  if (eot_ < 0)
    for (const char* text : kEotTexts)
      if (const int id = specials_.find(text); id >= 0) {
        eot_ = id;
        break;
      }

  // Every byte needs a piece, or some text could not be encoded at all; but
  // the bytes valid UTF-8 never holds may lack one (GPT-NeoX's vocabulary
  // has none): text holding them is refused when it is encoded.
  for (int b = 0; b < 256; ++b) {
    const int id = piece_ids_.find(byte_to_utf8(static_cast<uint8_t>(b)));
    if (id < 0 && !never_in_utf8(static_cast<uint8_t>(b))) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      fail(source, std::string("its vocabulary has no piece for byte ") + hex + " (" +
                       quote_text(byte_to_utf8(static_cast<uint8_t>(b))) + "): not a byte-level BPE vocabulary");
    }
    byte_ids_[b] = id;
  }
  add_merges(vocab, source);
  pretokenizer_ = std::make_unique<Pretokenizer>(vocab.patterns, source);
  for (const char* name : {"llama-bpe", "qwen2", "gpt-2"})
    known_pattern_ = known_pattern_ || vocab.patterns == pretokenizer_patterns(name);
}

// A newline followed by an ASCII letter always separates two words under the
// Llama-3, Qwen2 and GPT-2 patterns: no alternative takes a letter after a
// newline (the optional prefix of a letter run excludes \r and \n, and the
// whitespace and punctuation runs stop before letters). Merges stay inside
// words, so the two sides encode apart exactly as together.
std::optional<Tokenizer::Cut> BpeTokenizer::next_cut(std::string_view text, size_t from) const {
  if (!known_pattern_) return std::nullopt;
  for (size_t at = from < 1 ? 1 : from; at < text.size(); ++at) {
    const char c = text[at];
    if (text[at - 1] == '\n' && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return Cut{at, at};
  }
  return std::nullopt;
}

// "a b" -> {"a", "b"}: exactly one space, a piece on each side. Byte-level
// pieces write a space as "Ġ", so a merge line has no other space.
std::pair<std::string_view, std::string_view> split_merge(std::string_view line, size_t index,
                                                          const std::string& source) {
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string_view::npos)
    fail(source, "tokenizer.ggml.merges[" + std::to_string(index) + "] " + quote_text(line) +
                     " is not two pieces separated by one space");
  return {line.substr(0, space), line.substr(space + 1)};
}

// Merges by the ids they join. The merged piece is looked up through one
// reused buffer, not `left + right`: that was an allocation per merge.
void BpeTokenizer::add_merges(const BpeVocab& vocab, const std::string& source) {
  const bool lines = !vocab.merge_ends.empty();
  const size_t count = lines ? vocab.merge_ends.size() : vocab.merges.size();
  const auto line = [&](size_t i) {
    const size_t from = i == 0 ? 0 : vocab.merge_ends[i - 1];
    return std::string_view(vocab.merge_bytes).substr(from, vocab.merge_ends[i] - from);
  };
  if (count > size_t(INT32_MAX)) fail(source, "its vocabulary has more merges than ranks can number");
  merges_ = MergeTable(count);
  std::string joined;
  for (size_t rank = 0; rank < count; ++rank) {
    // Named views, not a structured binding: clang 14 cannot capture those.
    const auto halves = lines ? split_merge(line(rank), rank, source)
                              : std::pair<std::string_view, std::string_view>(vocab.merges[rank]);
    const std::string_view left = halves.first, right = halves.second;
    // -1: a special token's text. Such a merge is dropped: special pieces are
    // never symbols of a word, and one must not come out of user text.
    const auto piece_id = [&](std::string_view piece) {
      if (const int id = piece_ids_.find(piece); id >= 0) return id;
      if (specials_.find(piece) >= 0) return -1;
      fail(source, "merge " + std::to_string(rank) + " (" + quote_text(left) + " " + quote_text(right) + ") names " +
                       quote_text(piece) + ", which is not in the vocabulary");
    };
    joined.assign(left).append(right);
    const int l = piece_id(left), r = piece_id(right), merged = piece_id(joined);
    // A later duplicate of a merge never applies: the first rank wins.
    if (l >= 0 && r >= 0 && merged >= 0) merges_.add(l, r, Merge{static_cast<int>(rank), merged});
  }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const int id = piece_ids_.find(bytes_to_byte_level(word)); id >= 0) {
      ids.push_back(id);
      return;
    }
  }
  const int n = static_cast<int>(word.size());
  if (n == 1) {
    ids.push_back(byte_id(static_cast<uint8_t>(word[0])));
    return;
  }
  // One symbol per byte, linked left to right; a merged-away symbol has id -1.
  std::vector<int> id(static_cast<size_t>(n)), prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    id[i] = byte_id(static_cast<uint8_t>(word[static_cast<size_t>(i)]));
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate> queue;
  const auto consider = [&](int left) {
    const int right = next[left];
    if (right < 0) return;
    if (const Merge* m = find_merge(id[left], id[right])) queue.push({m->rank, left, id[left], id[right], m->merged});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    const int right = next[c.left];
    // Stale: one side has since been merged into something else.
    if (id[c.left] != c.left_id || right < 0 || id[right] != c.right_id) continue;
    id[c.left] = c.merged;
    id[right] = -1;
    next[c.left] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.left;
    if (prev[c.left] >= 0) consider(prev[c.left]);
    consider(c.left);
  }
  for (int i = 0; i >= 0; i = next[i]) ids.push_back(id[i]);
}

}  // namespace

std::string quote_text(std::string_view text) {
  constexpr size_t kMax = 40;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F || c == '"' || c == '\\') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (text.size() > kMax) out += "...";
  return out + "\"";
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer(const BpeVocab& vocab, const std::string& source) {
  if (vocab.nfc && !nfc_available())
    fail(source, "its normalizer is NFC, which needs ICU (libicu-dev), and this build has none");
  return std::make_unique<BpeTokenizer>(vocab, source);
}

}  // namespace h2o::text
