#include "core/model/model.h"

#include <filesystem>

#include "core/base/error.h"
#include "core/base/mapped_file.h"

namespace h2o {

int64_t ModelConfig::parameter_count() const {
  const int64_t d = dim, h = hidden_dim, kv = kv_dim(), q = int64_t(n_heads) * head_dim();
  const int64_t per_layer = 2 * d + d * q + 2 * d * kv + q * d + 3 * d * h;
  return int64_t(vocab_size) * d + n_layers * per_layer + d;
}

void ModelConfig::validate(const std::string& what) const {
  auto positive = [&](int v, const char* name) {
    if (v <= 0) fail(what, std::string(name) + " must be positive, got " + std::to_string(v));
  };
  positive(dim, "dim");
  positive(hidden_dim, "hidden_dim");
  positive(n_layers, "n_layers");
  positive(n_heads, "n_heads");
  positive(n_kv_heads, "n_kv_heads");
  positive(vocab_size, "vocab_size");
  positive(max_seq_len, "max_seq_len");
  if (dim % n_heads != 0) fail(what, "dim " + std::to_string(dim) + " is not a multiple of n_heads " + std::to_string(n_heads));
  if (n_heads % n_kv_heads != 0)
    fail(what, "n_heads " + std::to_string(n_heads) + " is not a multiple of n_kv_heads " + std::to_string(n_kv_heads));
  if (head_dim() % 2 != 0) fail(what, "head_dim " + std::to_string(head_dim()) + " is odd (RoPE rotates pairs)");
  if (!(rope_theta > 0)) fail(what, "rope_theta must be positive");
  if (!(norm_eps > 0)) fail(what, "norm_eps must be positive");
  // Keep every tensor's element count well inside int64 and the process.
  if (int64_t(dim) * hidden_dim > (int64_t(1) << 34) || int64_t(vocab_size) * dim > (int64_t(1) << 34))
    fail(what, "shape too large (dim " + std::to_string(dim) + ", hidden " + std::to_string(hidden_dim) + ", vocab " +
                   std::to_string(vocab_size) + ")");
  if (bos_id < 0 || bos_id >= vocab_size || eos_id < 0 || eos_id >= vocab_size)
    fail(what, "BOS/EOS ids outside the vocabulary");
}

std::vector<const Tensor*> Model::all_tensors() const {
  std::vector<const Tensor*> out{&weights.token_embedding};
  for (const auto& l : weights.layers)
    for (const Tensor* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w1, &l.w2, &l.w3}) out.push_back(t);
  out.push_back(&weights.final_norm);
  if (!shared_classifier()) out.push_back(&weights.classifier);
  return out;
}

int64_t Model::weight_bytes() const {
  int64_t total = 0;
  for (const Tensor* t : all_tensors()) total += t->bytes();
  return total;
}

DType Model::weight_dtype() const {
  return weights.layers.empty() ? weights.token_embedding.dtype : weights.layers[0].wq.dtype;
}

std::shared_ptr<Model> new_model(const ModelConfig& config, const std::string& path, const std::string& format) {
  auto model = std::make_shared<Model>();
  model->config = config;
  model->path = path;
  model->format = format;
  return model;
}

std::shared_ptr<const Model> load_model(const std::string& path) {
  if (is_synthetic_path(path)) return make_synthetic(parse_synthetic_path(path));
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return load_safetensors(path);
  const std::string name = fs::path(path).filename().string();
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".json") || ends_with(".safetensors")) return load_safetensors(path);
  auto file = MappedFile::open(path);
  if (file->size() >= 4 && std::memcmp(file->data(), "GGUF", 4) == 0) return load_gguf(path);
  // Named .gguf but without the magic: say that, rather than what the llama2.c reader would make of it.
  if (ends_with(".gguf")) fail(path, "not a GGUF file (it does not start with the magic \"GGUF\")");
  return load_llama2c(path);
}

}  // namespace h2o
