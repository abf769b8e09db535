#pragma once
// A loaded decoder-only model (the Llama family, Qwen2 and GPT-NeoX): its
// shape and views of its weight tensors.
//
// Weights are memory-mapped from the file when they are stored in a usable
// layout; otherwise (synthetic models, layouts that need permuting) the model
// owns the converted buffers. Every matrix is row-major [out, in], as in
// llama2.c, and the query/key rows of each head are in interleaved-pair RoPE
// order (llama2.c / GGUF convention; the safetensors loader converts from the
// Hugging Face half-split order).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/model/dtype.h"
#include "core/model/type_mix.h"

namespace h2o {

// RoPE frequency scaling for contexts longer than the model was trained on.
struct RopeScaling {
  std::string type = "none";       // "none", "linear" (positions / factor), "llama3" (Llama 3.1's smooth split)
  float factor = 1.0f;
  float low_freq_factor = 1.0f;    // llama3
  float high_freq_factor = 4.0f;   // llama3
  int original_context = 0;        // llama3: the pre-training context the split is measured against
  std::vector<float> freq_factors; // per pair, divides the frequency (GGUF's rope_freqs tensor); empty: none
};

// How a block normalises its input: RMSNorm with a weight (Llama), or
// LayerNorm with a weight and a bias (GPT-NeoX).
enum class NormKind { Rms, Layer };
// The feed-forward block: SwiGLU (gate w1, up w3, down w2; Llama) or a GELU
// MLP with biases (up w3 + b3, GELU, down w2 + b2; GPT-NeoX).
enum class FfnKind { SwiGlu, Gelu };

struct ModelConfig {
  std::string architecture = "llama";  // llama, mistral, qwen2 or gptneox (what the file said; the pass differs only below)
  int dim = 0;
  int hidden_dim = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int vocab_size = 0;
  int max_seq_len = 0;  // trained context
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  int bos_id = 1;
  int eos_id = 2;
  bool attention_bias = false;  // q, k and v projections add a bias (Qwen2, GPT-NeoX)
  bool output_bias = false;     // the attention output (bo) and both MLP matrices (b3, b2) add a bias (GPT-NeoX)
  NormKind norm = NormKind::Rms;
  FfnKind ffn = FfnKind::SwiGlu;
  // x + attn(norm1(x)) + ffn(norm2(x)) from the same x (GPT-NeoX's
  // use_parallel_residual), instead of one block after the other.
  bool parallel_residual = false;
  // Leading dimensions of each head that RoPE rotates (GPT-NeoX's
  // rotary_pct); 0: all of them. The rest keep frequency 0, an exact identity.
  int rotary_dims = 0;
  RopeScaling rope_scaling;

  // 0 for a head count validate() refuses: a loader asks before validating
  // (a fuzzed GGUF's zero heads divided by zero here).
  int head_dim() const { return n_heads > 0 ? dim / n_heads : 0; }
  int rotated_dims() const { return rotary_dims > 0 ? rotary_dims : head_dim(); }
  // The angle per position of each pair i of a head: theta^(-2i/rotated_dims),
  // scaled; 0 for the pairs past rotated_dims (never rotated).
  std::vector<double> rope_frequencies() const;
  int kv_dim() const { return n_kv_heads * head_dim(); }
  int group_size() const { return n_kv_heads > 0 ? n_heads / n_kv_heads : 0; }  // query heads per KV head
  int64_t parameter_count() const;  // but a separate classifier's (tied or not: Model knows)
  // Throws Error("<what>: ...") if the shape is inconsistent.
  void validate(const std::string& what) const;
};

// A view of one weight tensor: row-major, `rows` x `cols` (a vector has rows 1).
struct Tensor {
  const void* data = nullptr;
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;

  int64_t numel() const { return rows * cols; }
  // Bytes of one row, and of the whole tensor, in its type (quantised rows are whole blocks).
  int64_t row_bytes() const;
  int64_t bytes() const { return rows * row_bytes(); }
  const float* f32() const { return static_cast<const float*>(data); }
};

struct LayerWeights {
  Tensor attn_norm;  // [dim]
  Tensor wq;         // [n_heads*head_dim, dim]
  Tensor wk;         // [kv_dim, dim]
  Tensor wv;         // [kv_dim, dim]
  Tensor wo;         // [dim, n_heads*head_dim]
  Tensor ffn_norm;   // [dim]
  Tensor w1;         // gate [hidden, dim]
  Tensor w2;         // down [dim, hidden]
  Tensor w3;         // up   [hidden, dim]
  Tensor bq, bk, bv; // biases [q_dim], [kv_dim], [kv_dim]: only with attention_bias
  Tensor bo, b2, b3; // biases [dim], [dim], [hidden]: only with output_bias
  Tensor attn_norm_bias, ffn_norm_bias;  // [dim]: only with NormKind::Layer
};

struct ModelWeights {
  Tensor token_embedding;  // [vocab, dim]
  std::vector<LayerWeights> layers;
  Tensor final_norm;  // [dim]
  Tensor final_norm_bias;  // [dim]: only with NormKind::Layer
  Tensor classifier;  // [vocab, dim]; may alias token_embedding
};

// The vocabulary a model file carries (GGUF), enough to build a tokenizer.
struct EmbeddedVocab {
  std::string model;  // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int> types;  // SentencePiece piece types: 1 normal, 2 unknown, 3 control, 4 user, 5 unused, 6 byte
  int unk_id = 0;
  bool add_space_prefix = true;
  std::string chat_template;  // tokenizer.chat_template (Jinja), "" when the file has none
  // Byte-level BPE only: the merges by rank ("a b") and the pre-tokenizer's
  // name (tokenizer.ggml.merges, tokenizer.ggml.pre).
  std::vector<std::string> merges;
  std::string pre;
  int eot_id = -1;              // tokenizer.ggml.eot_token_id; -1: absent
  int pad_id = -1;              // tokenizer.ggml.padding_token_id; -1: absent
  std::optional<bool> add_bos;  // tokenizer.ggml.add_bos_token; absent: the vocabulary type's default
};

// A GGUF file's vocabulary alone, with its BOS and EOS ids.
struct GgufVocab {
  EmbeddedVocab vocab;
  int bos_id = -1;
  int eos_id = -1;
};

struct Model {
  ModelConfig config;
  ModelWeights weights;
  std::string path;    // file it came from, or "synthetic:<shape>"
  std::string format;  // "llama2c", "gguf", "safetensors", "synthetic"
  std::optional<EmbeddedVocab> vocab;

  // Keeps the mapping or the owned buffers alive as long as the views are used.
  std::shared_ptr<const void> storage;
  std::vector<std::shared_ptr<const void>> owned;

  // All tensors in a fixed order (embedding, per layer, final norm, classifier
  // unless shared): used by backends that upload, and by checksums.
  std::vector<const Tensor*> all_tensors() const;
  bool shared_classifier() const { return weights.classifier.data == weights.token_embedding.data; }
  int64_t weight_bytes() const;
  DType weight_dtype() const;  // of the layer matrices (the first layer's wq)
  // Every matrix's type, summed up: "F32", "Q8_0", "Q4_K_M" (llama.cpp's mix
  // of Q4_K and Q6_K), else "mostly Q4_K (+ Q5_0, F16)".
  std::string weight_types() const;
};

// Rows of each of `n_heads` heads reordered from the half-split RoPE order
// (Hugging Face, GGUF's NEOX-style Qwen2 and GPT-NeoX: row i pairs with row
// i + rotated/2) to interleaved pairs (2i, 2i+1), which every backend rotates;
// rows past `rotated` (partial rotary; 0: the whole head) stay where they are.
// Rows are `row_bytes` apart and independent, whatever their element type.
std::shared_ptr<std::vector<uint8_t>> interleave_rope_rows(const uint8_t* src, size_t row_bytes, int n_heads, int head_dim,
                                                           int rotated = 0);

// A model of this shape that came from `path` in `format`; the loader sets its tensors.
std::shared_ptr<Model> new_model(const ModelConfig& config, const std::string& path, const std::string& format);

// How far a load has come, and a way to stop it. `progress(done, total)` is
// called as the weights are made, in the loader's own units (only done/total
// means anything), from any of its threads: it must be thread-safe and quick.
// Returning false stops the load, which then throws LoadCancelled. A file is
// mapped, not read, so only the loads that make weights call it (a synthetic
// Llama-2-7B takes minutes on a small machine); a file's load reports nothing.
using LoadProgress = std::function<bool(int64_t done, int64_t total)>;
class LoadCancelled : public Error {
 public:
  using Error::Error;
};

// Loads a model file, choosing the format from its contents (GGUF magic,
// safetensors header or config.json folder, else llama2.c). Throws Error with
// a one-line message naming the file on any problem.
std::shared_ptr<const Model> load_model(const std::string& path, const LoadProgress& progress = {});

std::shared_ptr<const Model> load_llama2c(const std::string& path);
std::shared_ptr<const Model> load_gguf(const std::string& path);
// Only the vocabulary of a GGUF: works on vocabulary-only files (no tensors),
// which load_gguf refuses. Throws Error naming the file.
GgufVocab load_gguf_vocab(const std::string& path);
// `path` is a config.json, a *.safetensors file, a *.safetensors.index.json,
// or a folder holding config.json and the weights.
std::shared_ptr<const Model> load_safetensors(const std::string& path);

// Random weights at a named real shape, fixed seed. Names: stories260K,
// stories15M, stories42M, stories110M, tinyllama-1.1b, llama2-7b, qwen2-260K,
// qwen2-0.5b (Qwen2's biases and RoPE base), pythia-test, pythia-70m,
// pythia-410m, pythia-1.4b, pythia-2.8b (GPT-NeoX); an optional
// vocabulary override (e.g. 32000 to pair with tokenizer.model).
struct SyntheticSpec {
  std::string shape = "stories15M";
  uint64_t seed = 1234;
  TypeMix types = DType::F32;  // one type, or a mix such as q4_k_m
  int vocab_size = 0;   // 0: the shape's own
  int max_seq_len = 0;  // 0: the shape's own
};
ModelConfig synthetic_shape(const std::string& name);  // throws Error for an unknown name
std::vector<std::string> synthetic_shape_names();
std::shared_ptr<const Model> make_synthetic(const SyntheticSpec& spec, const LoadProgress& progress = {});
// make_synthetic(spec)'s tensors, types and shapes, without generating their
// weights (a 7B takes minutes): for sizes only. Each tensor's data points at
// one distinct byte (a tied classifier at the embedding's), so nothing may
// read it.
std::shared_ptr<const Model> synthetic_layout(const SyntheticSpec& spec);
// Parses "synthetic:<shape>[:vocab=N][:seed=N][:dtype=f16|q8_0|q4_k_m|...][:ctx=N]" model paths.
bool is_synthetic_path(const std::string& path);
SyntheticSpec parse_synthetic_path(const std::string& path);

}  // namespace h2o
