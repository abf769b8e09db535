// Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/): small
// valid inputs of every format, made with the same writers the loader tests
// use, so the fuzzer starts from files that get past the magic numbers.
//
//   build-fuzz/tests/fuzz/h2o-fuzz-corpus tests/fuzz/corpus
//
// The output is committed; rerun this only when a format or writer changes.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/model/gguf_writer.h"
#include "core/text/tokenizer.h"
#include "tests/model_writers.h"
#include "tests/text/bpe_writers.h"

namespace fs = std::filesystem;
using namespace h2o;
using namespace h2o::test;

namespace {

// The smallest shape the loaders accept with grouped-query attention:
// dim 4, hidden 4, 1 layer, 2 heads of dim 2, 1 KV head, vocab 8, context 8.
// fuzz_safetensors.cpp's fixed config.json describes this shape.
ModelConfig micro_config() {
  ModelConfig c;
  c.dim = 4;
  c.hidden_dim = 4;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.vocab_size = 8;
  c.max_seq_len = 8;
  return c;
}

void put(const fs::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  fs::create_directories(dir);
  write_file(dir / name, bytes);
}

void put(const fs::path& dir, const std::string& name, const std::string& text) {
  put(dir, name, std::vector<uint8_t>(text.begin(), text.end()));
}

void llama2c(const fs::path& dir) {
  const ModelArrays shared = random_arrays(micro_config(), 1, false);
  const ModelArrays separate = random_arrays(micro_config(), 2, true);
  put(dir, "micro-shared.bin", llama2c_bytes(shared));
  put(dir, "micro-separate.bin", llama2c_bytes(separate));
  auto header_only = llama2c_bytes(shared);
  header_only.resize(28);
  put(dir, "header-only.bin", header_only);
}

// A micro GPT-NeoX (dim 8, 1 layer, 2 heads of 4 with 2 rotary dimensions,
// hidden 8, vocab 8) through the project's own GGUF writer: fused attn_qkv,
// every bias, the gptneox keys, as llama.cpp's converter writes them.
void micro_gptneox(const fs::path& dir) {
  Model m;
  ModelConfig& c = m.config;
  c.architecture = "gptneox";
  c.dim = c.hidden_dim = c.vocab_size = c.max_seq_len = 8;
  c.n_layers = 1;
  c.n_heads = c.n_kv_heads = 2;
  c.rotary_dims = 2;
  c.norm = NormKind::Layer;
  c.ffn = FfnKind::Gelu;
  c.attention_bias = c.output_bias = c.parallel_residual = true;
  c.bos_id = c.eos_id = 0;
  m.path = "micro-gptneox";
  auto values = std::make_shared<std::vector<float>>(1024);
  for (size_t i = 0; i < values->size(); ++i) (*values)[i] = float(int(i * 37 % 17) - 8) / 16.0f;
  size_t used = 0;
  const auto take = [&](Tensor& t, int64_t rows, int64_t cols) {
    t = {values->data() + used, DType::F32, rows, cols};
    used += size_t(rows * cols);
  };
  ModelWeights& w = m.weights;
  w.layers.resize(1);
  LayerWeights& l = w.layers[0];
  take(w.token_embedding, 8, 8);
  for (Tensor* v : {&l.attn_norm, &l.attn_norm_bias, &l.bq, &l.bk, &l.bv, &l.bo, &l.ffn_norm, &l.ffn_norm_bias, &l.b2,
                    &l.b3, &w.final_norm, &w.final_norm_bias})
    take(*v, 1, 8);
  for (Tensor* matrix : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w2, &l.w3, &w.classifier}) take(*matrix, 8, 8);
  m.owned.push_back(values);
  write_gguf(m, (dir / "micro-gptneox.gguf").string(), TypeMix(DType::F32));
}

void gguf(const fs::path& dir) {
  const ModelArrays shared = random_arrays(micro_config(), 3, false);
  const ModelArrays separate = random_arrays(micro_config(), 4, true);
  put(dir, "micro-f32-vocab.gguf", llama_gguf(shared).build());
  put(dir, "micro-f16-novocab.gguf", llama_gguf(shared, {DType::F16, false}).build());
  put(dir, "micro-bf16-separate.gguf", llama_gguf(separate, {DType::BF16, true}).build());
  GgufWriter aligned = llama_gguf(shared);
  aligned.alignment = 64;
  aligned.set_u32("general.alignment", 64);
  put(dir, "micro-align64.gguf", aligned.build());
  // Quantised blocks need rows of 32: the micro shape widened to one block.
  ModelConfig wide = micro_config();
  wide.dim = 32;
  wide.hidden_dim = 32;
  put(dir, "block32-q8_0.gguf", llama_gguf(random_arrays(wide, 7, false), {DType::Q8_0, false}).build());
  put(dir, "block32-q4_0-separate.gguf", llama_gguf(random_arrays(wide, 8, true), {DType::Q4_0, false}).build());
  // Layouts the loader refuses (its type and shape give each tensor's bytes):
  // a Q4_0 tensor whose type says Q8_0 overlaps the next, two tensors at one offset.
  GgufWriter retyped = llama_gguf(random_arrays(wide, 8, true), {DType::Q4_0, false});
  retyped.tensor("token_embd.weight")->type = uint32_t(DType::Q8_0);
  put(dir, "q4_0-retyped-q8_0.gguf", retyped.build());
  GgufWriter same_offset = llama_gguf(random_arrays(wide, 8, true), {DType::Q4_0, false});
  same_offset.tensor("blk.0.attn_q.weight")->offset = 0;
  put(dir, "two-tensors-one-offset.gguf", same_offset.build());
  micro_gptneox(dir);
}

std::vector<uint8_t> safetensors_bytes(const ModelArrays& m, DType dtype) {
  const auto tensors = hf_tensors(m, dtype);
  return st_file(st_header(tensors).dump(), tensors);
}

void safetensors(const fs::path& dir) {
  const ModelArrays tied = random_arrays(micro_config(), 5, false);
  const ModelArrays separate = random_arrays(micro_config(), 6, true);
  // Weights alone: loaded beside the target's fixed config.json.
  put(dir, "micro-f32.safetensors", safetensors_bytes(tied, DType::F32));
  put(dir, "micro-bf16-lm-head.safetensors", safetensors_bytes(separate, DType::BF16));
  // config.json, the separator, then the weights: the config is fuzzed too.
  const std::string config = hf_config(tied.config, true).dump(1) + "\n----safetensors----\n";
  std::vector<uint8_t> both(config.begin(), config.end());
  const auto weights = safetensors_bytes(tied, DType::F16);
  both.insert(both.end(), weights.begin(), weights.end());
  put(dir, "micro-f16-with-config.bin", both);
}

void sentencepiece(const fs::path& dir) {
  EmbeddedVocab small;
  small.model = "llama";
  small.pieces = tiny_pieces(16);
  small.unk_id = 0;
  small.add_space_prefix = true;
  put(dir, "tiny16.model", sentencepiece_model_proto(small, 1, 2, "corpus"));
  // Byte-fallback pieces (<0x00>..<0xFF>) as Llama's tokenizer has them.
  EmbeddedVocab bytes = small;
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    bytes.pieces.insert(bytes.pieces.begin() + 3 + b, piece);
  }
  bytes.types.assign(bytes.pieces.size(), 1);
  bytes.types[0] = 2;
  bytes.types[1] = bytes.types[2] = 3;
  for (int b = 0; b < 256; ++b) bytes.types[3 + b] = 6;
  put(dir, "bytes272.model", sentencepiece_model_proto(bytes, 1, 2, "corpus"));
}

// Tokenizer files load_tokenizer tells apart: byte-level BPE vocabulary-only
// GGUF files (both pre-tokenizers), tokenizer.json files (merges as strings
// and as pairs, NFC), and a SentencePiece model.
void tokenizer(const fs::path& dir) {
  put(dir, "tiny-llama-bpe.gguf", tiny_bpe_gguf("llama-bpe").build());
  GgufWriter qwen2 = tiny_bpe_gguf("qwen2");
  qwen2.set_u32("tokenizer.ggml.eot_token_id", kTinyEot);
  qwen2.set_bool("tokenizer.ggml.add_bos_token", false);
  put(dir, "tiny-qwen2.gguf", qwen2.build());
  put(dir, "tiny-tokenizer.json", tiny_tokenizer_json().dump(1));
  nlohmann::json pairs = tiny_tokenizer_json();
  nlohmann::json merges = nlohmann::json::array();
  for (const std::string& m : tiny_bpe_merges()) merges.push_back({m.substr(0, m.find(' ')), m.substr(m.find(' ') + 1)});
  pairs["model"]["merges"] = merges;
  pairs["normalizer"] = {{"type", "NFC"}};
  pairs["post_processor"] = {{"type", "ByteLevel"}};
  put(dir, "tiny-pairs-nfc.json", pairs.dump());
  EmbeddedVocab small;
  small.model = "llama";
  small.pieces = tiny_pieces(16);
  put(dir, "tiny16.model", sentencepiece_model_proto(small, 1, 2, "corpus"));
}

void prompts(const fs::path& dir) {
  put(dir, "two-questions.jsonl",
      R"({"question_id": 81, "category": "writing", "turns": ["Write a haiku about rain.", "Now make it rhyme."]})"
      "\n"
      R"({"question_id": 82, "category": "math", "turns": ["What is 2 + 2?", "And times 3?"]})"
      "\n");
  put(dir, "unicode-and-escapes.jsonl",
      "{\"question_id\": 7, \"category\": \"humanities\", \"turns\": [\"Caf\\u00e9 \xc3\xa9t\xc3\xa9 \xe2\x80\x94 "
      "\xf0\x9f\x98\x80 \\\"quoted\\\"\\nnew line\"]}\r\n\n  \n");
  put(dir, "no-id-no-category.jsonl", "{\"turns\": [\"Only a turn.\"]}\n");
}

void token_ids(const fs::path& dir) {
  put(dir, "spaces.txt", "1 5 9 13 2\n");
  put(dir, "commas-and-lines.txt", "1,2,3,\n4, 5 ,6\n\n31\n");
  put(dir, "one.txt", "0");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: h2o-fuzz-corpus <corpus folder>\n";
    return 2;
  }
  const fs::path root = argv[1];
  try {
    llama2c(root / "llama2c");
    gguf(root / "gguf");
    safetensors(root / "safetensors");
    sentencepiece(root / "sentencepiece");
    tokenizer(root / "tokenizer");
    prompts(root / "prompts");
    token_ids(root / "token_ids");
  } catch (const std::exception& e) {
    std::cerr << "h2o-fuzz-corpus: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
