// A GGUF "gpt2" vocabulary as a BpeVocab, and the pre-tokenizers GGUF files
// name in tokenizer.ggml.pre. The patterns are the ones the vocabularies'
// tokenizer.json files give (Hugging Face's, which the llama.cpp test vectors
// come from); llama.cpp rewrites the case-insensitive group by hand because
// its own regex engine lacks (?i:), PCRE2 has it.
#include <map>

#include "core/base/error.h"
#include "core/text/bpe_tokenizer.h"

namespace h2o::text {
namespace {

const std::string kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2 is Llama-3's pattern with digits one at a time.
const std::string kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct PreTokenizer {
  const std::string* pattern;
  bool llama3;  // llama.cpp's Llama-3 settings: BOS by default, whole-word pieces taken whole
};

const std::map<std::string, PreTokenizer>& known_pretokenizers() {
  static const std::map<std::string, PreTokenizer> known = {
      {"llama-bpe", {&kLlama3Pattern, true}}, {"llama3", {&kLlama3Pattern, true}},
      {"llama-v3", {&kLlama3Pattern, true}},  {"qwen2", {&kQwen2Pattern, false}},
      {"gpt-2", {&kGpt2Pattern, false}},
      // GPT-NeoX's and OLMo's names for the same split (llama.cpp treats them as gpt-2).
      {"mpt", {&kGpt2Pattern, false}},    {"olmo", {&kGpt2Pattern, false}},
  };
  return known;
}

std::string known_names() {
  std::string names;
  for (const auto& [name, pre] : known_pretokenizers()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// Moves the merge lines into one buffer, freeing each line as it goes, so
// the two forms are never both held whole.
void pack_merges(std::vector<std::string>& lines, BpeVocab& out, const std::string& what) {
  size_t total = 0;
  for (const std::string& line : lines) total += line.size();
  if (total > UINT32_MAX) fail(what, "its merges exceed 4 GiB of text");
  out.merge_bytes.reserve(total);
  out.merge_ends.reserve(lines.size());
  for (std::string& line : lines) {
    out.merge_bytes += line;
    out.merge_ends.push_back(static_cast<uint32_t>(out.merge_bytes.size()));
    std::string().swap(line);
  }
  std::vector<std::string>().swap(lines);
}

}  // namespace

const std::string& gpt2_pattern() { return kGpt2Pattern; }

std::optional<std::vector<std::string>> pretokenizer_patterns(const std::string& name) {
  const auto it = known_pretokenizers().find(name);
  if (it == known_pretokenizers().end()) return std::nullopt;
  return std::vector<std::string>{*it->second.pattern};
}

BpeVocab bpe_vocab_from_gguf(const EmbeddedVocab& vocab, int bos_id, int eos_id, const std::string& what) {
  EmbeddedVocab copy = vocab;
  return bpe_vocab_from_gguf(std::move(copy), bos_id, eos_id, what);
}

BpeVocab bpe_vocab_from_gguf(EmbeddedVocab&& vocab, int bos_id, int eos_id, const std::string& what) {
  if (vocab.pre.empty())
    fail(what, "its gpt2 vocabulary has no tokenizer.ggml.pre, so how to split text into words is unknown (supported: " +
                   known_names() + ")");
  const auto pre = known_pretokenizers().find(vocab.pre);
  if (pre == known_pretokenizers().end())
    fail(what, "tokenizer.ggml.pre " + quote_text(vocab.pre) + " is not a supported pre-tokenizer (supported: " +
                   known_names() + ")");
  if (vocab.merges.empty()) fail(what, "its gpt2 vocabulary has no merges (tokenizer.ggml.merges)");

  BpeVocab out;
  out.pieces = std::move(vocab.pieces);
  out.types = std::move(vocab.types);
  pack_merges(vocab.merges, out, what);  // make_bpe_tokenizer checks each line
  out.patterns = {*pre->second.pattern};
  out.pre_name = vocab.pre;
  out.ignore_merges = pre->second.llama3;
  out.bos_id = bos_id;
  out.eos_id = eos_id;
  out.eot_id = vocab.eot_id;
  // llama.cpp: BOS for Llama-3 unless the file says otherwise, none for the others.
  out.add_bos = vocab.add_bos.value_or(pre->second.llama3);
  out.chat_template = std::move(vocab.chat_template);
  return out;
}

}  // namespace h2o::text
