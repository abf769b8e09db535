#pragma once
// A tiny hand-made byte-level BPE vocabulary, as a GGUF "gpt2" vocabulary
// and as a Hugging Face tokenizer.json, for tests and fuzz seeds that must
// not depend on the shared assets. Header-only, like model_writers.h.
//
// Ids 0..255 are the bytes (in GPT-2's byte alphabet), then the merged
// pieces below in merge order, then five special tokens:
//   rank 0 "h e" -> 256 "he"      rank 5 "o r"    -> 261 "or"      rank 10 "a b"   -> 266 "ab"
//   rank 1 "l l" -> 257 "ll"      rank 6 "Ġw or"  -> 262 "Ġwor"    rank 11 "a a"   -> 267 "aa"
//   rank 2 "he ll" -> 258 "hell"  rank 7 "l d"    -> 263 "ld"      rank 12 "aa aa" -> 268 "aaaa"
//   rank 3 "hell o" -> 259 "hello" rank 8 "Ġwor ld" -> 264 "Ġworld" rank 13 "1 2"  -> 269 "12"
//   rank 4 "Ġ w" -> 260 "Ġw"      rank 9 "b c"    -> 265 "bc"
//   270 "xyz" (a piece no merge makes: only whole-word lookup finds it)
//   271 <|begin_of_text|>, 272 <|end_of_text|>, 273 <|eot_id|> (control), 274 <u> (user-defined)
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/model_writers.h"
#include "core/model/model.h"
#include "core/text/byte_unicode.h"

namespace h2o::test {

constexpr int kTinyBos = 271, kTinyEos = 272, kTinyEot = 273, kTinyUser = 274, kTinyPieces = 275;

inline std::vector<std::string> tiny_bpe_merges() {
  return {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or", "l d", "\xC4\xA0wor ld",
          "b c",  "a b", "a a",   "aa aa", "1 2"};
}

// The GGUF form: tokenizer.ggml.model "gpt2" with the given pre-tokenizer.
inline EmbeddedVocab tiny_bpe_vocab(const std::string& pre = "llama-bpe") {
  EmbeddedVocab v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.pieces.push_back(text::byte_to_utf8(static_cast<uint8_t>(b)));
  v.merges = tiny_bpe_merges();
  for (const std::string& m : v.merges) {
    const size_t space = m.find(' ');
    v.pieces.push_back(m.substr(0, space) + m.substr(space + 1));
  }
  for (const char* p : {"xyz", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<u>"}) v.pieces.push_back(p);
  v.types.assign(v.pieces.size(), 1);
  v.types[kTinyBos] = v.types[kTinyEos] = v.types[kTinyEot] = 3;
  v.types[kTinyUser] = 4;
  v.scores.assign(v.pieces.size(), 0.0f);
  return v;
}

// A vocabulary-only GGUF of `vocab` (no tensors), as llama.cpp's vocab files are.
inline GgufWriter tiny_bpe_gguf(const EmbeddedVocab& vocab) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.ggml.model", vocab.model);
  if (!vocab.pre.empty()) w.set_string("tokenizer.ggml.pre", vocab.pre);
  w.set_strings("tokenizer.ggml.tokens", vocab.pieces);
  std::vector<int32_t> types(vocab.types.begin(), vocab.types.end());
  w.set_array("tokenizer.ggml.token_type", kGgufI32, types);
  w.set_strings("tokenizer.ggml.merges", vocab.merges);
  w.set_u32("tokenizer.ggml.bos_token_id", kTinyBos);
  w.set_u32("tokenizer.ggml.eos_token_id", kTinyEos);
  return w;
}

inline GgufWriter tiny_bpe_gguf(const std::string& pre = "llama-bpe") { return tiny_bpe_gguf(tiny_bpe_vocab(pre)); }

// The tokenizer.json form, with Llama-3's pre-tokenizer (Split + ByteLevel)
// and a post-processor that puts <|begin_of_text|> first.
inline nlohmann::json tiny_tokenizer_json() {
  const EmbeddedVocab v = tiny_bpe_vocab();
  nlohmann::json vocab = nlohmann::json::object();
  for (int id = 0; id < kTinyBos; ++id) vocab[v.pieces[size_t(id)]] = id;
  nlohmann::json added = nlohmann::json::array();
  for (int id = kTinyBos; id < kTinyPieces; ++id)
    added.push_back({{"id", id}, {"content", v.pieces[size_t(id)]}, {"special", id != kTinyUser}});
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", llama3}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<|begin_of_text|>", {{"id", "<|begin_of_text|>"}, {"ids", {kTinyBos}}, {"tokens", {"<|begin_of_text|>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"byte_fallback", false},
        {"ignore_merges", true},
        {"vocab", vocab},
        {"merges", v.merges}}},
  };
}

inline void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  const std::string text = j.dump(1);
  write_file(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace h2o::test
