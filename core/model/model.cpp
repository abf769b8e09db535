#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/model/quant.h"

namespace h2o {

int64_t ModelConfig::parameter_count() const {
  const int64_t d = dim, h = hidden_dim, kv = kv_dim(), q = int64_t(n_heads) * head_dim();
  const int64_t norms = norm == NormKind::Layer ? 2 * d : d;  // weight, and bias for LayerNorm
  const int64_t ffn_matrices = ffn == FfnKind::SwiGlu ? 3 : 2;
  const int64_t per_layer = 2 * norms + d * q + 2 * d * kv + q * d + ffn_matrices * d * h + (attention_bias ? q + 2 * kv : 0) +
                            (output_bias ? d + h + d : 0);
  return int64_t(vocab_size) * d + n_layers * per_layer + norms;
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
  if (rotary_dims < 0 || rotary_dims > head_dim() || rotary_dims % 2 != 0)
    fail(what, "the rotary part of a head (" + std::to_string(rotary_dims) + " of " + std::to_string(head_dim()) +
                   " dimensions) is not a whole number of pairs within the head");
  if (!(rope_theta > 0)) fail(what, "rope_theta must be positive");
  if (!(norm_eps > 0)) fail(what, "norm_eps must be positive");
  // Keep every tensor's element count well inside int64 and the process.
  if (int64_t(dim) * hidden_dim > (int64_t(1) << 34) || int64_t(vocab_size) * dim > (int64_t(1) << 34))
    fail(what, "shape too large (dim " + std::to_string(dim) + ", hidden " + std::to_string(hidden_dim) + ", vocab " +
                   std::to_string(vocab_size) + ")");
  if (bos_id < 0 || bos_id >= vocab_size || eos_id < 0 || eos_id >= vocab_size)
    fail(what, "BOS/EOS ids outside the vocabulary");
  const RopeScaling& s = rope_scaling;
  if (s.type != "none" && s.type != "linear" && s.type != "llama3")
    fail(what, "RoPE scaling '" + s.type + "' is not supported (none, linear or llama3)");
  if (!(s.factor >= 1.0f)) fail(what, "RoPE scaling factor must be at least 1");
  if (s.type == "llama3" && (s.original_context <= 0 || !(s.high_freq_factor > s.low_freq_factor)))
    fail(what, "llama3 RoPE scaling needs original_max_position_embeddings and high_freq_factor > low_freq_factor");
  if (!s.freq_factors.empty() && int(s.freq_factors.size()) != rotated_dims() / 2)
    fail(what, "rope_freqs has " + std::to_string(s.freq_factors.size()) + " factors for " +
                   std::to_string(rotated_dims() / 2) + " rotated pairs");
  for (float f : s.freq_factors)
    if (!(f > 0)) fail(what, "rope_freqs holds a factor that is not positive");
}

std::vector<double> ModelConfig::rope_frequencies() const {
  const int rotated_pairs = rotated_dims() / 2;
  const RopeScaling& s = rope_scaling;
  std::vector<double> freqs(static_cast<size_t>(head_dim() / 2), 0.0);  // past the rotary part: angle 0, cos 1, sin 0
  for (int i = 0; i < rotated_pairs; ++i) {
    double f = std::pow(double(rope_theta), -2.0 * i / rotated_dims());
    if (s.type == "linear") {
      f /= s.factor;
    } else if (s.type == "llama3") {
      // Long wavelengths are slowed by the factor, short ones kept, the band
      // between blended (Llama 3.1's "rope_type": "llama3").
      const double wavelength = 2 * M_PI / f;
      const double low_wavelength = s.original_context / double(s.low_freq_factor);
      const double high_wavelength = s.original_context / double(s.high_freq_factor);
      if (wavelength > low_wavelength) {
        f /= s.factor;
      } else if (wavelength >= high_wavelength) {
        const double smooth = (s.original_context / wavelength - s.low_freq_factor) /
                              (double(s.high_freq_factor) - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    if (!s.freq_factors.empty()) f /= s.freq_factors[size_t(i)];
    freqs[size_t(i)] = f;
  }
  return freqs;
}

int64_t Tensor::row_bytes() const { return int64_t(h2o::row_bytes(dtype, cols)); }

std::vector<const Tensor*> Model::all_tensors() const {
  std::vector<const Tensor*> out{&weights.token_embedding};
  for (const auto& l : weights.layers) {
    // The gate is absent from a GELU MLP.
    for (const Tensor* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w1, &l.w2, &l.w3})
      if (t != &l.w1 || t->data) out.push_back(t);
    // The biases only where the model has them.
    for (const Tensor* t : {&l.bq, &l.bk, &l.bv, &l.bo, &l.b2, &l.b3, &l.attn_norm_bias, &l.ffn_norm_bias})
      if (t->data) out.push_back(t);
  }
  out.push_back(&weights.final_norm);
  if (weights.final_norm_bias.data) out.push_back(&weights.final_norm_bias);
  if (!shared_classifier()) out.push_back(&weights.classifier);
  return out;
}

int64_t Model::weight_bytes() const {
  int64_t total = 0;
  for (const Tensor* t : all_tensors()) total += t->bytes();
  return total;
}

std::string Model::weight_types() const {
  std::map<DType, int> count;
  for (const Tensor* t : all_tensors())
    if (t->rows > 1) ++count[t->dtype];
  if (count.empty()) return "none";
  std::vector<std::pair<int, DType>> by_count;
  for (const auto& [type, n] : count) by_count.push_back({-n, type});
  std::sort(by_count.begin(), by_count.end());
  const DType main = by_count.front().second;
  std::string text = quant_type_name(main);
  if (count.size() == 1) return text;
  if (count.size() == 2 && count.count(DType::Q6_K) && (main == DType::Q4_K || main == DType::Q5_K)) return text + "_M";
  text = "mostly " + text + " (+";
  for (size_t i = 1; i < by_count.size(); ++i) text += std::string(i > 1 ? ", " : " ") + quant_type_name(by_count[i].second);
  return text + ")";
}

DType Model::weight_dtype() const {
  return weights.layers.empty() ? weights.token_embedding.dtype : weights.layers[0].wq.dtype;
}

std::shared_ptr<std::vector<uint8_t>> interleave_rope_rows(const uint8_t* src, size_t row_bytes, int n_heads, int head_dim,
                                                           int rotated) {
  auto buf = std::make_shared<std::vector<uint8_t>>(size_t(n_heads) * size_t(head_dim) * row_bytes);
  std::memcpy(buf->data(), src, buf->size());  // the rows past the rotary part stay where they are
  uint8_t* dst = buf->data();
  const int half = (rotated > 0 ? rotated : head_dim) / 2;
  for (int h = 0; h < n_heads; ++h) {
    const size_t base = size_t(h) * size_t(head_dim);
    for (int i = 0; i < half; ++i) {
      std::memcpy(dst + (base + 2 * size_t(i)) * row_bytes, src + (base + size_t(i)) * row_bytes, row_bytes);
      std::memcpy(dst + (base + 2 * size_t(i) + 1) * row_bytes, src + (base + size_t(i + half)) * row_bytes, row_bytes);
    }
  }
  return buf;
}

std::shared_ptr<Model> new_model(const ModelConfig& config, const std::string& path, const std::string& format) {
  auto model = std::make_shared<Model>();
  model->config = config;
  model->path = path;
  model->format = format;
  return model;
}

std::shared_ptr<const Model> load_model(const std::string& path, const LoadProgress& progress) {
  if (is_synthetic_path(path)) return make_synthetic(parse_synthetic_path(path), progress);
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
