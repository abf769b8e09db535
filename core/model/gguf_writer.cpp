#include "core/model/gguf_writer.h"

#include <cstring>
#include <ostream>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/model/quant.h"

namespace h2o {
namespace {

// GGUF metadata value types (gguf_type).
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };
constexpr uint64_t kAlignment = 32;

// Little-endian values into a growing byte buffer (the header is small; tensor data is streamed).
struct Header {
  std::vector<uint8_t> bytes;
  uint64_t kv_count = 0;

  template <typename T>
  void raw(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof v);
  }
  void text(const std::string& s) {
    raw<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void key(const std::string& k, uint32_t type) {
    text(k);
    raw<uint32_t>(type);
    ++kv_count;
  }
  void u32(const std::string& k, uint32_t v) { key(k, kU32), raw(v); }
  void f32(const std::string& k, float v) { key(k, kF32), raw(v); }
  void boolean(const std::string& k, bool v) { key(k, kBool), raw<uint8_t>(v ? 1 : 0); }
  void string(const std::string& k, const std::string& v) { key(k, kString), text(v); }
  void strings(const std::string& k, const std::vector<std::string>& v) {
    key(k, kArray), raw<uint32_t>(kString), raw<uint64_t>(v.size());
    for (const auto& s : v) text(s);
  }
  template <typename T>
  void array(const std::string& k, uint32_t elem_type, const std::vector<T>& v) {
    key(k, kArray), raw<uint32_t>(elem_type), raw<uint64_t>(v.size());
    for (const T& x : v) raw(x);
  }
};

// One part of a tensor to write: a model tensor, and whether its rows (or
// bias elements) go back to RoPE's half-split order (Qwen2's and GPT-NeoX's Q/K).
struct Part {
  const Tensor* source;
  bool rope_halves = false;
};

// One tensor to write: its GGUF name, its parts (GPT-NeoX's fused attn_qkv
// has three, stacked by rows; everything else one), and how it is stored.
struct Planned {
  std::string name;
  std::vector<Part> parts;
  DType type;
  uint64_t offset = 0;
  bool vector() const { return parts[0].source->rows == 1; }
  int64_t cols() const { return parts[0].source->cols; }
  int64_t rows() const {
    int64_t n = 0;
    for (const Part& p : parts) n += p.source->rows;
    return n;
  }
  uint64_t bytes() const {
    if (!vector()) return uint64_t(rows()) * row_bytes(type, cols());
    int64_t n = 0;
    for (const Part& p : parts) n += p.source->cols;
    return uint64_t(n) * dtype_size(type);
  }
};

void vocab_keys(Header& h, const EmbeddedVocab& v, const ModelConfig& c) {
  h.string("tokenizer.ggml.model", v.model);
  if (!v.pre.empty()) h.string("tokenizer.ggml.pre", v.pre);
  h.strings("tokenizer.ggml.tokens", v.pieces);
  if (v.model == "llama") h.array("tokenizer.ggml.scores", kF32, v.scores);
  h.array("tokenizer.ggml.token_type", kI32, std::vector<int32_t>(v.types.begin(), v.types.end()));
  if (!v.merges.empty()) h.strings("tokenizer.ggml.merges", v.merges);
  h.u32("tokenizer.ggml.bos_token_id", uint32_t(c.bos_id));
  h.u32("tokenizer.ggml.eos_token_id", uint32_t(c.eos_id));
  h.u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk_id));
  if (v.eot_id >= 0) h.u32("tokenizer.ggml.eot_token_id", uint32_t(v.eot_id));
  if (v.pad_id >= 0) h.u32("tokenizer.ggml.padding_token_id", uint32_t(v.pad_id));
  if (v.add_bos) h.boolean("tokenizer.ggml.add_bos_token", *v.add_bos);
  h.boolean("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  if (!v.chat_template.empty()) h.string("tokenizer.chat_template", v.chat_template);
}

// Row r of the stored part: the source row it comes from (the inverse of
// interleave_rope_rows over the first `rotated` rows of each head).
int64_t source_row(const Part& p, int64_t r, int head_dim, int rotated) {
  if (!p.rope_halves) return r;
  const int64_t head = r / head_dim, i = r % head_dim, half = rotated / 2;
  if (i >= rotated) return r;
  return head * head_dim + (i < half ? 2 * i : 2 * (i - half) + 1);
}

// Writes one part's rows (a vector's elements) in `type`, through `put`:
// copied when the type is the same, else through float32.
template <typename Put>
void write_part(const Part& p, DType type, int head_dim, int rotated, Put&& put) {
  const Tensor& t = *p.source;
  const bool vector = t.rows == 1;
  const int64_t rows = vector ? t.cols : t.rows, cols = vector ? 1 : t.cols;  // a bias permutes element by element
  const size_t src_row = vector ? size_t(dtype_size(t.dtype)) : size_t(t.row_bytes());
  const bool same = t.dtype == type;
  std::vector<float> values;
  std::vector<uint8_t> row;
  if (vector && !same) {  // a whole vector converts at once
    values.resize(size_t(t.cols));
    convert_to_f32(t.data, t.dtype, size_t(t.cols), values.data());
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t from = source_row(p, r, head_dim, rotated);
    if (vector && !same) {
      const float v = values[size_t(from)];
      row.resize(4);
      std::memcpy(row.data(), &v, 4);
    } else if (same) {
      const auto* src = static_cast<const uint8_t*>(t.data) + size_t(from) * src_row;
      row.assign(src, src + src_row);
    } else {
      values.resize(size_t(cols));
      convert_to_f32(static_cast<const uint8_t*>(t.data) + size_t(from) * src_row, t.dtype, size_t(cols), values.data());
      row.resize(row_bytes(type, cols));
      quantize_row(type, values.data(), row.data(), cols);
    }
    put(row.data(), row.size());
  }
}

// The tensors to write, named as llama.cpp names them, each with its type.
class TensorPlan {
 public:
  TensorPlan(const ModelConfig& c, const TypeMix& types)
      // llama.cpp rotates Qwen2 and GPT-NeoX in NEOX order: their files keep HF's rows.
      : c_(c), types_(types), halves_(c.architecture == "qwen2" || c.architecture == "gptneox") {}

  void add_parts(const std::string& name, std::vector<Part> parts, TensorRole role, int layer) {
    // Norms and biases as llama.cpp writes them: F32.
    const DType type =
        role == TensorRole::Vector ? DType::F32 : types_.type_for(role, layer, c_.n_layers, parts[0].source->cols);
    tensors.push_back({name, std::move(parts), type});
  }
  void add(const std::string& name, const Tensor& t, TensorRole role, int layer, bool rope = false) {
    add_parts(name, {{&t, rope && halves_}}, role, layer);
  }

  void llama_layer(const LayerWeights& L, int l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", L.attn_norm, TensorRole::Vector, l);
    add(p + "attn_q.weight", L.wq, TensorRole::AttnQ, l, true);
    add(p + "attn_k.weight", L.wk, TensorRole::AttnK, l, true);
    add(p + "attn_v.weight", L.wv, TensorRole::AttnV, l);
    if (L.bq.data) {
      add(p + "attn_q.bias", L.bq, TensorRole::Vector, l, true);
      add(p + "attn_k.bias", L.bk, TensorRole::Vector, l, true);
      add(p + "attn_v.bias", L.bv, TensorRole::Vector, l);
    }
    add(p + "attn_output.weight", L.wo, TensorRole::AttnOut, l);
    add(p + "ffn_norm.weight", L.ffn_norm, TensorRole::Vector, l);
    add(p + "ffn_gate.weight", L.w1, TensorRole::FfnGate, l);
    add(p + "ffn_down.weight", L.w2, TensorRole::FfnDown, l);
    add(p + "ffn_up.weight", L.w3, TensorRole::FfnUp, l);
  }

  void neox_layer(const LayerWeights& L, int l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", L.attn_norm, TensorRole::Vector, l);
    add(p + "attn_norm.bias", L.attn_norm_bias, TensorRole::Vector, l);
    // Fused as llama.cpp's converter writes it: [Q; K; V], each in RoPE's half-split order.
    add_parts(p + "attn_qkv.weight", {{&L.wq, true}, {&L.wk, true}, {&L.wv}}, TensorRole::AttnQ, l);
    add_parts(p + "attn_qkv.bias", {{&L.bq, true}, {&L.bk, true}, {&L.bv}}, TensorRole::Vector, l);
    add(p + "attn_output.weight", L.wo, TensorRole::AttnOut, l);
    add(p + "attn_output.bias", L.bo, TensorRole::Vector, l);
    add(p + "ffn_norm.weight", L.ffn_norm, TensorRole::Vector, l);
    add(p + "ffn_norm.bias", L.ffn_norm_bias, TensorRole::Vector, l);
    add(p + "ffn_up.weight", L.w3, TensorRole::FfnUp, l);
    add(p + "ffn_up.bias", L.b3, TensorRole::Vector, l);
    add(p + "ffn_down.weight", L.w2, TensorRole::FfnDown, l);
    add(p + "ffn_down.bias", L.b2, TensorRole::Vector, l);
  }

  std::vector<Planned> tensors;

 private:
  const ModelConfig& c_;
  const TypeMix& types_;
  bool halves_;
};

// The metadata keys of `model`: its architecture's hyperparameters and its vocabulary.
Header model_keys(const Model& model) {
  const ModelConfig& c = model.config;
  const std::string& arch = c.architecture;
  const RopeScaling& scaling = c.rope_scaling;
  Header h;
  const auto key = [&](const char* name) { return arch + "." + name; };
  h.string("general.architecture", arch);
  h.string("general.name", model.path);
  h.u32(key("context_length"), uint32_t(c.max_seq_len));
  h.u32(key("embedding_length"), uint32_t(c.dim));
  h.u32(key("feed_forward_length"), uint32_t(c.hidden_dim));
  h.u32(key("block_count"), uint32_t(c.n_layers));
  h.u32(key("attention.head_count"), uint32_t(c.n_heads));
  h.u32(key("attention.head_count_kv"), uint32_t(c.n_kv_heads));
  h.u32(key("rope.dimension_count"), uint32_t(c.rotated_dims()));
  h.f32(key("rope.freq_base"), c.rope_theta);
  if (c.norm == NormKind::Layer) h.f32(key("attention.layer_norm_epsilon"), c.norm_eps);
  else h.f32(key("attention.layer_norm_rms_epsilon"), c.norm_eps);
  if (arch == "gptneox") h.boolean(key("use_parallel_residual"), c.parallel_residual);
  if (scaling.type == "linear") h.string(key("rope.scaling.type"), "linear"), h.f32(key("rope.scaling.factor"), scaling.factor);
  if (model.vocab) vocab_keys(h, *model.vocab, c);
  else h.u32("tokenizer.ggml.bos_token_id", uint32_t(c.bos_id)), h.u32("tokenizer.ggml.eos_token_id", uint32_t(c.eos_id));
  return h;
}

// Tensor infos: dims fastest-varying first, data offsets packed at the alignment (set in `tensors`).
Header tensor_infos(std::vector<Planned>& tensors) {
  Header infos;
  uint64_t next = 0;
  for (Planned& p : tensors) {
    p.offset = next;
    next += (p.bytes() + kAlignment - 1) / kAlignment * kAlignment;
    infos.text(p.name);
    const bool vector = p.vector();
    infos.raw<uint32_t>(vector ? 1 : 2);
    infos.raw<uint64_t>(vector ? p.bytes() / dtype_size(p.type) : uint64_t(p.cols()));
    if (!vector) infos.raw<uint64_t>(uint64_t(p.rows()));
    infos.raw<uint32_t>(uint32_t(p.type));
    infos.raw<uint64_t>(p.offset);
  }
  return infos;
}

}  // namespace

void write_gguf(const Model& model, const std::string& path, const TypeMix& types) {
  const ModelConfig& c = model.config;
  const std::string& arch = c.architecture;
  const ModelWeights& w = model.weights;

  TensorPlan plan(c, types);
  plan.add("token_embd.weight", w.token_embedding, model.shared_classifier() ? TensorRole::Classifier : TensorRole::Embedding, 0);
  for (int l = 0; l < c.n_layers; ++l) {
    if (arch == "gptneox") plan.neox_layer(w.layers[size_t(l)], l);
    else plan.llama_layer(w.layers[size_t(l)], l);
  }
  plan.add("output_norm.weight", w.final_norm, TensorRole::Vector, 0);
  if (w.final_norm_bias.data) plan.add("output_norm.bias", w.final_norm_bias, TensorRole::Vector, 0);
  if (!model.shared_classifier()) plan.add("output.weight", w.classifier, TensorRole::Classifier, 0);
  Tensor freqs;  // Llama 3.1's per-pair divisors, as llama.cpp's converter writes them
  const RopeScaling& scaling = c.rope_scaling;
  if (!scaling.freq_factors.empty()) {
    freqs = {scaling.freq_factors.data(), DType::F32, 1, int64_t(scaling.freq_factors.size())};
    plan.add("rope_freqs.weight", freqs, TensorRole::Vector, 0);
  }
  if (scaling.type == "llama3")
    fail(path, "llama3 RoPE scaling has no GGUF key (llama.cpp stores it as rope_freqs factors)");

  const Header h = model_keys(model);
  const Header infos = tensor_infos(plan.tensors);

  AtomicFile file(path, std::ios::out | std::ios::trunc | std::ios::binary);
  std::ostream& out = file.stream();
  uint64_t written = 0;
  const auto put = [&](const void* data, size_t n) {
    out.write(static_cast<const char*>(data), std::streamsize(n));
    written += n;
  };
  const auto pad = [&] {
    static const char zeros[kAlignment] = {};
    put(zeros, size_t((kAlignment - written % kAlignment) % kAlignment));
  };
  put("GGUF", 4);
  const uint32_t version = 3;
  const uint64_t tensor_count = plan.tensors.size();
  put(&version, 4);
  put(&tensor_count, 8);
  put(&h.kv_count, 8);
  put(h.bytes.data(), h.bytes.size());
  put(infos.bytes.data(), infos.bytes.size());
  pad();
  for (const Planned& p : plan.tensors) {
    for (const Part& part : p.parts) write_part(part, p.type, c.head_dim(), c.rotated_dims(), put);
    pad();
  }
  file.commit();
}

}  // namespace h2o
