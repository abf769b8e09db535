#pragma once
// Writers for small model files in every format the loaders read (llama2.c,
// GGUF, Hugging Face safetensors), so tests can build their own checkpoints
// instead of depending on downloaded ones, and can corrupt them on purpose.
//
// Header-only: tests/CMakeLists.txt compiles only tests/test_*.cpp, and any
// test may include this.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model/dtype.h"
#include "core/model/model.h"
#include "core/model/quant.h"

namespace h2o::test {

// ---- model contents --------------------------------------------------------

// The float32 weights of a whole model in this project's layout: row-major
// [out, in] matrices, query/key rows of each head in interleaved RoPE pairs.
struct ModelArrays {
  struct Layer {
    std::vector<float> attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3;
    std::vector<float> bq, bk, bv;  // only with config.attention_bias (Qwen2)
  };
  ModelConfig config;
  std::vector<float> embedding;  // [vocab, dim]
  std::vector<Layer> layers;
  std::vector<float> final_norm;
  std::vector<float> classifier;  // [vocab, dim]; empty: shared with the embedding
};

// dim 16, hidden 40, 2 layers, 4 heads, 2 KV heads (GQA), vocab 32, context 64.
inline ModelConfig tiny_config() {
  ModelConfig c;
  c.dim = 16;
  c.hidden_dim = 40;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 32;
  c.max_seq_len = 64;
  return c;
}

inline ModelArrays random_arrays(const ModelConfig& c, uint64_t seed, bool separate_classifier) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto make = [&](int64_t n, float center = 0.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = center + u(rng);
    return v;
  };
  const int64_t d = c.dim, h = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  ModelArrays m;
  m.config = c;
  m.embedding = make(int64_t(c.vocab_size) * d);
  for (int l = 0; l < c.n_layers; ++l) {
    ModelArrays::Layer L;
    L.attn_norm = make(d, 1.0f);
    L.wq = make(q * d);
    L.wk = make(kv * d);
    L.wv = make(kv * d);
    if (c.attention_bias) L.bq = make(q), L.bk = make(kv), L.bv = make(kv);
    L.wo = make(d * q);
    L.ffn_norm = make(d, 1.0f);
    L.w1 = make(h * d);
    L.w2 = make(d * h);
    L.w3 = make(h * d);
    m.layers.push_back(std::move(L));
  }
  m.final_norm = make(d, 1.0f);
  if (separate_classifier) m.classifier = make(int64_t(c.vocab_size) * d);
  return m;
}

// ---- bytes -----------------------------------------------------------------

// `values` in `dtype`; a block type quantises them in one run, so each row
// must be whole blocks (llama_gguf's matrices then are too).
inline std::vector<uint8_t> encode(const std::vector<float>& values, DType dtype) {
  if (!is_float(dtype)) {
    std::vector<uint8_t> out(row_bytes(QuantType(dtype), int64_t(values.size())));
    quantize_row(QuantType(dtype), values.data(), out.data(), int64_t(values.size()));
    return out;
  }
  std::vector<uint8_t> out(values.size() * size_t(dtype_size(dtype)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&out[4 * i], &values[i], 4);
    } else {
      const uint16_t h = dtype == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

// What a value reads back as after being stored in `dtype`.
inline std::vector<float> rounded(const std::vector<float>& values, DType dtype) {
  std::vector<float> out(values.size());
  const auto bytes = encode(values, dtype);
  convert_to_f32(bytes.data(), dtype, values.size(), out.data());
  return out;
}

inline std::vector<float> tensor_values(const Tensor& t) {
  std::vector<float> out(size_t(t.numel()));
  convert_to_f32(t.data, t.dtype, out.size(), out.data());
  return out;
}

inline void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

inline std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Little-endian byte builder.
struct Bytes {
  std::vector<uint8_t> v;
  template <typename T>
  void put(T x) {
    const size_t at = v.size();
    v.resize(at + sizeof(T));
    std::memcpy(&v[at], &x, sizeof(T));
  }
  void put_string(const std::string& s) {  // GGUF string: u64 length + bytes
    put<uint64_t>(s.size());
    v.insert(v.end(), s.begin(), s.end());
  }
  void append(const std::vector<uint8_t>& b) { v.insert(v.end(), b.begin(), b.end()); }
  void pad_to(size_t alignment, uint8_t fill = 0) {
    while (v.size() % alignment) v.push_back(fill);
  }
};

// ---- llama2.c --------------------------------------------------------------

// Header, weights in llama2.c order, RoPE tables (filled with a marker value
// the loader must skip), then the classifier when it is not shared.
inline std::vector<uint8_t> llama2c_bytes(const ModelArrays& m) {
  const ModelConfig& c = m.config;
  Bytes b;
  const int32_t vocab = m.classifier.empty() ? c.vocab_size : -c.vocab_size;
  for (int32_t x : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, vocab, c.max_seq_len}) b.put<int32_t>(x);
  auto floats = [&](const std::vector<float>& v) { b.append(encode(v, DType::F32)); };
  floats(m.embedding);
  for (const auto& l : m.layers) floats(l.attn_norm);
  for (const auto& l : m.layers) floats(l.wq);
  for (const auto& l : m.layers) floats(l.wk);
  for (const auto& l : m.layers) floats(l.wv);
  for (const auto& l : m.layers) floats(l.wo);
  for (const auto& l : m.layers) floats(l.ffn_norm);
  for (const auto& l : m.layers) floats(l.w1);
  for (const auto& l : m.layers) floats(l.w2);
  for (const auto& l : m.layers) floats(l.w3);
  floats(m.final_norm);
  floats(std::vector<float>(size_t(c.max_seq_len) * c.head_dim(), 7.0f));  // freq_cis_real + freq_cis_imag
  if (!m.classifier.empty()) floats(m.classifier);
  return b.v;
}

inline void write_llama2c(const std::filesystem::path& path, const ModelArrays& m) { write_file(path, llama2c_bytes(m)); }

// ---- GGUF ------------------------------------------------------------------

enum GgufValueType : uint32_t {
  kGgufU8 = 0, kGgufI8, kGgufU16, kGgufI16, kGgufU32, kGgufI32, kGgufF32, kGgufBool,
  kGgufString, kGgufArray, kGgufU64, kGgufI64, kGgufF64,
};
constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlBF16 = 30;

inline uint32_t ggml_type_of(DType t) { return uint32_t(t); }  // DType's values are GGML's type ids

// Builds a GGUF file from metadata entries and tensors. Everything is
// editable before build(), so tests can write both valid and broken files.
class GgufWriter {
 public:
  struct TensorEntry {
    std::string name;
    std::vector<uint64_t> dims;  // fastest-varying first: a [rows, cols] matrix is {cols, rows}
    uint32_t type = kGgmlF32;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;  // default: packed at the alignment
  };
  // Byte positions of the sections in the last build().
  struct Layout {
    size_t metadata = 0, tensor_infos = 0, data = 0, size = 0;
  };

  uint32_t version = 3;
  uint64_t alignment = 32;  // layout only; add general.alignment too when it is not 32
  std::optional<uint64_t> tensor_count_override, kv_count_override;

  void set_raw(const std::string& key, uint32_t type, std::vector<uint8_t> value) {
    for (auto& kv : kvs_)
      if (kv.key == key) {
        kv.type = type;
        kv.value = std::move(value);
        return;
      }
    kvs_.push_back({key, type, std::move(value)});
  }
  // Appends even when the key exists (for duplicate-key tests).
  void append_raw(const std::string& key, uint32_t type, std::vector<uint8_t> value) {
    kvs_.push_back({key, type, std::move(value)});
  }
  template <typename T>
  void set_scalar(const std::string& key, uint32_t type, T x) {
    Bytes b;
    b.put<T>(x);
    set_raw(key, type, b.v);
  }
  void set_u32(const std::string& key, uint32_t x) { set_scalar(key, kGgufU32, x); }
  void set_i32(const std::string& key, int32_t x) { set_scalar(key, kGgufI32, x); }
  void set_f32(const std::string& key, float x) { set_scalar(key, kGgufF32, x); }
  void set_bool(const std::string& key, bool x) { set_scalar<uint8_t>(key, kGgufBool, x ? 1 : 0); }
  void set_string(const std::string& key, const std::string& s) {
    Bytes b;
    b.put_string(s);
    set_raw(key, kGgufString, b.v);
  }
  void set_strings(const std::string& key, const std::vector<std::string>& v) {
    Bytes b;
    b.put<uint32_t>(kGgufString);
    b.put<uint64_t>(v.size());
    for (const auto& s : v) b.put_string(s);
    set_raw(key, kGgufArray, b.v);
  }
  template <typename T>
  void set_array(const std::string& key, uint32_t elem_type, const std::vector<T>& v) {
    Bytes b;
    b.put<uint32_t>(elem_type);
    b.put<uint64_t>(v.size());
    for (const T& x : v) b.put<T>(x);
    set_raw(key, kGgufArray, b.v);
  }
  void remove(const std::string& key) {
    std::erase_if(kvs_, [&](const Kv& kv) { return kv.key == key; });
  }

  void add_tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, std::vector<uint8_t> data) {
    tensors_.push_back({name, std::move(dims), type, std::move(data), std::nullopt});
  }
  TensorEntry* tensor(const std::string& name) {
    for (auto& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }
  void remove_tensor(const std::string& name) {
    std::erase_if(tensors_, [&](const TensorEntry& t) { return t.name == name; });
  }

  std::vector<uint8_t> build(Layout* layout = nullptr) const {
    Bytes b;
    b.v.insert(b.v.end(), {'G', 'G', 'U', 'F'});
    b.put<uint32_t>(version);
    b.put<uint64_t>(tensor_count_override.value_or(tensors_.size()));
    b.put<uint64_t>(kv_count_override.value_or(kvs_.size()));
    Layout at;
    at.metadata = b.v.size();
    for (const auto& kv : kvs_) {
      b.put_string(kv.key);
      b.put<uint32_t>(kv.type);
      b.append(kv.value);
    }
    at.tensor_infos = b.v.size();
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const auto& t : tensors_) {
      offsets.push_back(t.offset.value_or(next));
      next += (t.data.size() + alignment - 1) / alignment * alignment;
      b.put_string(t.name);
      b.put<uint32_t>(uint32_t(t.dims.size()));
      for (uint64_t d : t.dims) b.put<uint64_t>(d);
      b.put<uint32_t>(t.type);
      b.put<uint64_t>(offsets.back());
    }
    b.pad_to(alignment);
    at.data = b.v.size();
    for (const auto& t : tensors_) {
      b.append(t.data);
      b.pad_to(alignment);
    }
    at.size = b.v.size();
    if (layout) *layout = at;
    return b.v;
  }
  void write(const std::filesystem::path& path, Layout* layout = nullptr) const { write_file(path, build(layout)); }

 private:
  struct Kv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> value;
  };
  std::vector<Kv> kvs_;
  std::vector<TensorEntry> tensors_;
};

struct GgufOptions {
  DType dtype = DType::F32;  // of the matrices; norms are F32, as llama.cpp writes them
  bool with_vocab = true;
};

// A tiny SentencePiece-style vocabulary: <unk>, <s>, </s>, then "▁a", "b"...
inline std::vector<std::string> tiny_pieces(int n) {
  std::vector<std::string> p = {"<unk>", "<s>", "</s>"};
  for (int i = 3; i < n; ++i) p.push_back((i % 2 ? "\xe2\x96\x81" : "") + std::string(1, char('a' + i % 26)) + std::to_string(i));
  return p;
}

// A valid llama GGUF for `m`; output.weight is written only for a separate classifier.
inline GgufWriter llama_gguf(const ModelArrays& m, const GgufOptions& opt = {}) {
  const ModelConfig& c = m.config;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "tiny test model");
  w.set_u32("llama.embedding_length", c.dim);
  w.set_u32("llama.feed_forward_length", c.hidden_dim);
  w.set_u32("llama.block_count", c.n_layers);
  w.set_u32("llama.attention.head_count", c.n_heads);
  w.set_u32("llama.attention.head_count_kv", c.n_kv_heads);
  w.set_u32("llama.context_length", c.max_seq_len);
  w.set_u32("llama.rope.dimension_count", c.head_dim());
  w.set_f32("llama.rope.freq_base", c.rope_theta);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  if (opt.with_vocab) {
    const auto pieces = tiny_pieces(c.vocab_size);
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (int i = 0; i < c.vocab_size; ++i) {
      scores.push_back(-float(i));
      types.push_back(i == 0 ? 2 : i < 3 ? 3 : 1);
    }
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_strings("tokenizer.ggml.tokens", pieces);
    w.set_array("tokenizer.ggml.scores", kGgufF32, scores);
    w.set_array("tokenizer.ggml.token_type", kGgufI32, types);
    w.set_u32("tokenizer.ggml.bos_token_id", c.bos_id);
    w.set_u32("tokenizer.ggml.eos_token_id", c.eos_id);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
  }
  auto matrix = [&](const std::string& name, const std::vector<float>& v, int64_t rows, int64_t cols) {
    w.add_tensor(name, {uint64_t(cols), uint64_t(rows)}, ggml_type_of(opt.dtype), encode(v, opt.dtype));
  };
  auto vec = [&](const std::string& name, const std::vector<float>& v) {
    w.add_tensor(name, {uint64_t(v.size())}, kGgmlF32, encode(v, DType::F32));
  };
  const int64_t d = c.dim, h = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  matrix("token_embd.weight", m.embedding, c.vocab_size, d);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const auto& L = m.layers[l];
    vec(p + "attn_norm.weight", L.attn_norm);
    matrix(p + "attn_q.weight", L.wq, q, d);
    matrix(p + "attn_k.weight", L.wk, kv, d);
    matrix(p + "attn_v.weight", L.wv, kv, d);
    matrix(p + "attn_output.weight", L.wo, d, q);
    vec(p + "ffn_norm.weight", L.ffn_norm);
    matrix(p + "ffn_gate.weight", L.w1, h, d);
    matrix(p + "ffn_down.weight", L.w2, d, h);
    matrix(p + "ffn_up.weight", L.w3, h, d);
  }
  vec("output_norm.weight", m.final_norm);
  if (!m.classifier.empty()) matrix("output.weight", m.classifier, c.vocab_size, d);
  return w;
}

inline void write_gguf(const std::filesystem::path& path, const ModelArrays& m, const GgufOptions& opt = {}) {
  llama_gguf(m, opt).write(path);
}

// ---- safetensors -----------------------------------------------------------

struct StTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", or anything for broken files
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};

inline const char* st_dtype(DType t) { return t == DType::F32 ? "F32" : t == DType::F16 ? "F16" : "BF16"; }

// The header a writer would produce: data packed in order.
inline nlohmann::json st_header(const std::vector<StTensor>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t at = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + t.data.size()}}};
    at += t.data.size();
  }
  return h;
}

// u64 header length, the header text padded with spaces to 8 bytes (as the
// reference writer does; `pad` false leaves it as is), then each tensor's
// bytes in order.
inline std::vector<uint8_t> st_file(const std::string& header_text, const std::vector<StTensor>& tensors, bool pad = true) {
  std::string text = header_text;
  while (pad && (8 + text.size()) % 8) text.push_back(' ');
  Bytes b;
  b.put<uint64_t>(text.size());
  b.v.insert(b.v.end(), text.begin(), text.end());
  for (const auto& t : tensors) b.append(t.data);
  return b.v;
}

inline void write_safetensors(const std::filesystem::path& path, const std::vector<StTensor>& tensors) {
  write_file(path, st_file(st_header(tensors).dump(), tensors));
}

// Hugging Face's q/k row order from ours: per head, HF row i holds our row
// 2i and HF row i + head_dim/2 our row 2i+1.
inline std::vector<float> hf_permute(const std::vector<float>& w, int n_heads, int head_dim, int64_t cols) {
  std::vector<float> out(w.size());
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h)
    for (int i = 0; i < half; ++i)
      for (int j = 0; j < 2; ++j) {
        const int64_t ours = int64_t(h) * head_dim + 2 * i + j, hf = int64_t(h) * head_dim + j * half + i;
        std::copy_n(&w[size_t(ours * cols)], cols, &out[size_t(hf * cols)]);
      }
  return out;
}

inline nlohmann::json hf_config(const ModelConfig& c, bool tie) {
  const bool qwen2 = c.architecture == "qwen2";
  nlohmann::json j = {{"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
          {"model_type", c.architecture},
          {"hidden_act", "silu"},
          {"hidden_size", c.dim},
          {"intermediate_size", c.hidden_dim},
          {"num_hidden_layers", c.n_layers},
          {"num_attention_heads", c.n_heads},
          {"num_key_value_heads", c.n_kv_heads},
          {"vocab_size", c.vocab_size},
          {"max_position_embeddings", c.max_seq_len},
          {"rope_theta", c.rope_theta},
          {"rms_norm_eps", c.norm_eps},
          {"bos_token_id", c.bos_id},
          {"eos_token_id", c.eos_id},
          {"tie_word_embeddings", tie},
          {"torch_dtype", "float32"}};
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear") j["rope_scaling"] = {{"type", "linear"}, {"factor", s.factor}};
  if (s.type == "llama3")
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", s.factor}, {"low_freq_factor", s.low_freq_factor},
                         {"high_freq_factor", s.high_freq_factor}, {"original_max_position_embeddings", s.original_context}};
  return j;
}

// The tensors of `m` under Hugging Face names, q/k rows permuted to HF order.
inline std::vector<StTensor> hf_tensors(const ModelArrays& m, DType dtype) {
  const ModelConfig& c = m.config;
  const uint64_t d = c.dim, h = c.hidden_dim, q = uint64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  std::vector<StTensor> out;
  auto add = [&](const std::string& name, const std::vector<float>& v, std::vector<uint64_t> shape) {
    out.push_back({name, st_dtype(dtype), std::move(shape), encode(v, dtype)});
  };
  add("model.embed_tokens.weight", m.embedding, {uint64_t(c.vocab_size), d});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const auto& L = m.layers[l];
    add(p + "input_layernorm.weight", L.attn_norm, {d});
    add(p + "self_attn.q_proj.weight", hf_permute(L.wq, c.n_heads, c.head_dim(), c.dim), {q, d});
    add(p + "self_attn.k_proj.weight", hf_permute(L.wk, c.n_kv_heads, c.head_dim(), c.dim), {kv, d});
    add(p + "self_attn.v_proj.weight", L.wv, {kv, d});
    if (!L.bq.empty()) {
      add(p + "self_attn.q_proj.bias", hf_permute(L.bq, c.n_heads, c.head_dim(), 1), {q});
      add(p + "self_attn.k_proj.bias", hf_permute(L.bk, c.n_kv_heads, c.head_dim(), 1), {kv});
      add(p + "self_attn.v_proj.bias", L.bv, {kv});
    }
    add(p + "self_attn.o_proj.weight", L.wo, {d, q});
    add(p + "post_attention_layernorm.weight", L.ffn_norm, {d});
    add(p + "mlp.gate_proj.weight", L.w1, {h, d});
    add(p + "mlp.down_proj.weight", L.w2, {d, h});
    add(p + "mlp.up_proj.weight", L.w3, {h, d});
  }
  add("model.norm.weight", m.final_norm, {d});
  if (!m.classifier.empty()) add("lm_head.weight", m.classifier, {uint64_t(c.vocab_size), d});
  return out;
}

struct HfOptions {
  DType dtype = DType::F32;
  int shards = 0;  // 0: one model.safetensors; N: model-0000i-of-0000N.safetensors + index
};

// config.json and the weights of `m` in `dir` (created if needed); the
// classifier is tied (tie_word_embeddings, no lm_head) when m has none.
inline void write_hf_model(const std::filesystem::path& dir, const ModelArrays& m, const HfOptions& opt = {}) {
  std::filesystem::create_directories(dir);
  const std::string config = hf_config(m.config, m.classifier.empty()).dump(2);
  write_file(dir / "config.json", std::vector<uint8_t>(config.begin(), config.end()));
  const auto tensors = hf_tensors(m, opt.dtype);
  if (opt.shards == 0) {
    write_safetensors(dir / "model.safetensors", tensors);
    return;
  }
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  const size_t per_shard = (tensors.size() + opt.shards - 1) / opt.shards;
  for (int s = 0; s < opt.shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, opt.shards);
    const size_t begin = std::min(tensors.size(), s * per_shard), end = std::min(tensors.size(), begin + per_shard);
    std::vector<StTensor> part(tensors.begin() + begin, tensors.begin() + end);
    for (const auto& t : part) index["weight_map"][t.name] = name;
    write_safetensors(dir / name, part);
  }
  const std::string text = index.dump(2);
  write_file(dir / "model.safetensors.index.json", std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace h2o::test
