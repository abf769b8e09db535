#pragma once
// The fuzz targets' bodies, one per input format. Each feeds one input to a
// loader and checks what came back; any outcome other than a usable result or
// an h2o::Error (a crash, a sanitizer report, another exception, a tensor view
// outside its file) is a bug. The libFuzzer entry points (fuzz_<name>.cpp) and
// the regression test that replays tests/data/regressions/<name>/ both call
// these, so a crash input keeps being checked in the ordinary test suite.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/model/model.h"
#include "core/text/prompts.h"
#include "core/text/token_ids.h"
#include "core/text/tokenizer.h"
#include "fuzz_support.h"

namespace h2o::fuzz {

// llama2.c checkpoints (load_llama2c). Any input must give a
// model whose tensors lie inside the file, or an h2o::Error; anything else
// (a crash, a sanitizer report, another exception) is a bug.
inline void run_llama2c(const uint8_t* data, size_t size) {
  const std::string path = write_input("model.bin", data, size);
  try {
    const auto model = h2o::load_llama2c(path);
    const auto file = std::static_pointer_cast<const h2o::MappedFile>(model->storage);
    check_inside(*model, file->data(), file->size());
    touch_tensors(*model);
  } catch (const h2o::Error&) {
  }
}

// GGUF files (load_gguf), and the tokenizer built from the
// vocabulary a GGUF carries (tokenizer_from_vocab: a ModelProto written here
// and parsed by SentencePiece). Any input must load, or fail with h2o::Error.
inline void run_gguf(const uint8_t* data, size_t size) {
  const std::string path = write_input("model.gguf", data, size);
  try {
    const auto model = h2o::load_gguf(path);
    const auto file = std::static_pointer_cast<const h2o::MappedFile>(model->storage);
    check_inside(*model, file->data(), file->size());
    touch_tensors(*model);
    const auto tokenizer = h2o::tokenizer_for(*model, "");
    for (int id : tokenizer->encode("Hello world, 123 \xe2\x96\x81 \xc3\xa9")) (void)tokenizer->piece_text(id, id);
    for (int id = -1; id <= tokenizer->vocab_size(); ++id) (void)tokenizer->piece_text(id, tokenizer->bos_id());
  } catch (const h2o::Error&) {
  }
}

// Splits a safetensors fuzz input into config.json and weights.
constexpr std::string_view kSafetensorsSeparator = "\n----safetensors----\n";

// The shape of the seed corpus' model (tests/fuzz/make_corpus.cpp, micro_config).
constexpr std::string_view kSafetensorsConfig =
    R"({"model_type": "llama", "hidden_act": "silu", "hidden_size": 4, "intermediate_size": 4,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 8,
        "max_position_embeddings": 8, "rms_norm_eps": 1e-5, "bos_token_id": 1, "eos_token_id": 2})";

// Hugging Face checkpoints (load_safetensors). The input is
// either a model.safetensors file, loaded beside the fixed config.json above,
// or a config.json, the separator line, and a model.safetensors file, so the
// config reader is fuzzed too.
inline void run_safetensors(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view config = kSafetensorsConfig, weights = input;
  if (const size_t at = input.find(kSafetensorsSeparator); at != std::string_view::npos) {
    config = input.substr(0, at);
    weights = input.substr(at + kSafetensorsSeparator.size());
  }
  write_input("config.json", reinterpret_cast<const uint8_t*>(config.data()), config.size());
  write_input("model.safetensors", reinterpret_cast<const uint8_t*>(weights.data()), weights.size());
  try {
    const auto model = h2o::load_safetensors(scratch_dir().string());
    touch_tensors(*model);
  } catch (const h2o::Error&) {
  }
}

// SentencePiece tokenizer.model files (load_sentencepiece),
// then encoding and printing with whatever loaded. SentencePiece itself is a
// system library (not instrumented); what is fuzzed is that this project
// turns every refusal into an h2o::Error and never trusts what it loaded.
inline void run_sentencepiece(const uint8_t* data, size_t size) {
  const std::string path = write_input("tokenizer.model", data, size);
  try {
    const auto tokenizer = h2o::load_sentencepiece(path);
    for (int id : tokenizer->encode("Hello world, 123 \xe2\x96\x81 \xc3\xa9 <0x41>")) (void)tokenizer->piece_text(id, id);
    for (int id = -1; id <= tokenizer->vocab_size() && id < 4096; ++id)
      (void)tokenizer->piece_text(id, tokenizer->bos_id());
    (void)tokenizer->describe();
  } catch (const h2o::Error&) {
  }
}

// Tokenizer files of every kind through load_tokenizer, which tells them
// apart by contents: a GGUF's vocabulary (SentencePiece or byte-level BPE
// with its merges and pre-tokenizer), a Hugging Face tokenizer.json (its
// regexes compiled by PCRE2), else a SentencePiece model. Whatever loads must
// encode with and without special tokens to ids inside its vocabulary, and
// print every piece.
inline void run_tokenizer(const uint8_t* data, size_t size) {
  const std::string path = write_input("tokenizer", data, size);
  try {
    const auto tokenizer = h2o::load_tokenizer(path);
    const std::string sample = "Hello world, it's 1234 \xe2\x96\x81 \xc3\xa9\xe4\xbd\xa0 <|eot_id|><s>\n\n  \xff\xc3";
    for (const auto& ids : {tokenizer->encode(sample), tokenizer->encode_with_specials(sample)})
      for (int id : ids)
        if (id < 0 || id >= tokenizer->vocab_size()) __builtin_trap();  // ids the model would index with
    for (int id = -1; id <= tokenizer->vocab_size() && id < 4096; ++id) (void)tokenizer->piece_text(id, tokenizer->bos_id());
    (void)tokenizer->special_id("<|eot_id|>");
    (void)tokenizer->describe();
  } catch (const h2o::Error&) {
  }
}

// MT-Bench question files in FastChat's JSONL format
// (load_mt_bench), then the chat template applied to every turn.
inline void run_prompts(const uint8_t* data, size_t size) {
  const std::string path = write_input("question.jsonl", data, size);
  try {
    (void)h2o::load_mt_bench(path);
  } catch (const h2o::Error&) {
  }
  try {
    (void)h2o::load_mt_bench(path, 1);
  } catch (const h2o::Error&) {
  }
}

// token-id files (read_token_ids, what `eval --ids` reads)
// and the --prompt-ids flag's list (parse_token_list), with and without a
// vocabulary bound.
inline void run_token_ids(const uint8_t* data, size_t size) {
  const std::string path = write_input("ids.txt", data, size);
  for (int vocab : {0, 32}) {
    try {
      for (int id : h2o::read_token_ids(path, vocab))
        if (id < 0 || (vocab > 0 && id >= vocab)) __builtin_trap();  // the bound is the reader's promise
    } catch (const h2o::Error&) {
    }
    try {
      const std::string text(reinterpret_cast<const char*>(data), size);
      for (int id : h2o::parse_token_list(text, "--prompt-ids", vocab))
        if (id < 0 || (vocab > 0 && id >= vocab)) __builtin_trap();
    } catch (const h2o::Error&) {
    }
  }
}

}  // namespace h2o::fuzz
