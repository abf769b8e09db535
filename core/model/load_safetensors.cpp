// Hugging Face Llama, Mistral, Qwen2 and GPT-NeoX (Pythia) checkpoints:
// config.json plus weights in one model.safetensors or in shards listed by
// model.safetensors.index.json.
//
// A safetensors file is a u64 little-endian header length N, N bytes of JSON
// describing each tensor (dtype, shape, [begin, end) relative to the data),
// then the data. Tensors are views of the mapped files, except the query and
// key projections: Hugging Face orders each head's rows as two halves
// ("rotate_half"), this project as interleaved pairs, so those two are copied
// into owned buffers in the right order.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/base/mapped_file.h"
#include "core/model/model.h"

namespace h2o {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// nlohmann's messages are single lines already; this keeps the promise even
// if a future version quotes input text.
std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

json read_json_file(const std::string& file) {
  auto mapped = MappedFile::open(file);
  const char* p = reinterpret_cast<const char*>(mapped->data());
  return parse_json_document(p, p + mapped->size(), file);
}

// ---- where the files are -------------------------------------------------

struct Paths {
  std::string config;
  std::string index;   // set for sharded checkpoints
  std::string single;  // set for one model.safetensors
};

Paths resolve_paths(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  fs::path folder;
  Paths out;
  const std::string name = p.filename().string();
  if (fs::is_directory(p, ec)) {
    folder = p;
  } else if (ends_with(name, ".safetensors.index.json")) {
    out.index = path;
  } else if (ends_with(name, ".safetensors")) {
    out.single = path;
  } else if (!ends_with(name, ".json")) {
    fail(path, "not a safetensors model (expected a folder, config.json, *.safetensors or *.safetensors.index.json)");
  }
  if (folder.empty()) folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (out.index.empty() && out.single.empty()) {
    // A folder or its config.json: prefer the index, as Hugging Face does.
    const fs::path index = folder / "model.safetensors.index.json", single = folder / "model.safetensors";
    if (fs::exists(index, ec)) out.index = index.string();
    else if (fs::exists(single, ec)) out.single = single.string();
    else fail(path, "no model.safetensors or model.safetensors.index.json in " + folder.string());
  }
  out.config = (folder / "config.json").string();
  if (!fs::exists(out.config, ec)) fail(path, "no config.json beside the weights (looked for " + out.config + ")");
  return out;
}

// ---- config.json ---------------------------------------------------------

struct HfConfig {
  ModelConfig config;
  bool tie_embeddings = false;
};

class ConfigReader {
 public:
  ConfigReader(const json& j, const std::string& file) : j_(j), file_(file) {}

  int integer(const char* key, std::optional<int> def) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (!def) fail(file_, std::string("missing \"") + key + "\"");
      return *def;
    }
    return as_int(*it, key);
  }
  // bos/eos ids may be a list (several stop tokens): the first one is used.
  int token_id(const char* key, int def) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return def;
    if (it->is_array()) {
      if (it->empty()) return def;
      return as_int(it->front(), key);
    }
    return as_int(*it, key);
  }
  float number(const char* key, float def) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return def;
    if (!it->is_number()) fail(file_, std::string("\"") + key + "\" should be a number");
    return float(it->get<double>());
  }
  bool boolean(const char* key, bool def) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return def;
    if (!it->is_boolean()) fail(file_, std::string("\"") + key + "\" should be true or false");
    return it->get<bool>();
  }
  std::optional<std::string> string(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) fail(file_, std::string("\"") + key + "\" should be a string");
    return it->get<std::string>();
  }
  bool present(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }

 private:
  int as_int(const json& v, const char* key) const {
    if (!v.is_number_integer()) fail(file_, std::string("\"") + key + "\" should be an integer");
    // Unsigned values above INT64_MAX cannot be read as int64: treat as out of range.
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT32_MAX))
      fail(file_, std::string("\"") + key + "\" is out of range");
    const int64_t i = v.get<int64_t>();
    if (i < 0 || i > INT32_MAX) fail(file_, std::string("\"") + key + "\" = " + std::to_string(i) + " is out of range");
    return int(i);
  }

  const json& j_;
  const std::string& file_;
};

// "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
// "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, or
// {"type": "linear", "factor": 2.0}; "default" means none.
RopeScaling read_rope_scaling(const json& j, const std::string& file) {
  if (!j.is_object()) fail(file, "\"rope_scaling\" should be an object");
  const ConfigReader r(j, file);
  const std::string type = r.string("rope_type").value_or(r.string("type").value_or("default"));
  RopeScaling s;
  if (type == "default") return s;
  if (type != "linear" && type != "llama3")
    fail(file, "rope_scaling type '" + type + "' is not supported (linear or llama3)");
  s.type = type;
  s.factor = r.number("factor", 1.0f);
  if (type == "llama3") {
    s.low_freq_factor = r.number("low_freq_factor", 1.0f);
    s.high_freq_factor = r.number("high_freq_factor", 4.0f);
    s.original_context = r.integer("original_max_position_embeddings", std::nullopt);
  }
  return s;
}

// GPT-NeoX's config.json: LayerNorm, a GELU MLP, biases everywhere, RoPE on
// the first rotary_pct of each head, parallel residual unless it says not.
HfConfig read_neox_config(const ConfigReader& r, const std::string& file) {
  if (auto act = r.string("hidden_act"); act && *act != "gelu")
    fail(file, "hidden_act " + *act + " is not supported (GPT-NeoX models here use gelu)");
  if (!r.boolean("attention_bias", true)) fail(file, "attention_bias false is not supported for gpt_neox (its projections are biased)");
  HfConfig out;
  ModelConfig& c = out.config;
  c.architecture = "gptneox";
  c.norm = NormKind::Layer;
  c.ffn = FfnKind::Gelu;
  c.attention_bias = c.output_bias = true;
  c.parallel_residual = r.boolean("use_parallel_residual", true);
  c.dim = r.integer("hidden_size", std::nullopt);
  c.hidden_dim = r.integer("intermediate_size", std::nullopt);
  c.n_layers = r.integer("num_hidden_layers", std::nullopt);
  c.n_heads = r.integer("num_attention_heads", std::nullopt);
  c.n_kv_heads = c.n_heads;
  c.vocab_size = r.integer("vocab_size", std::nullopt);
  c.max_seq_len = r.integer("max_position_embeddings", std::nullopt);
  // Older configs say rotary_emb_base, newer ones rope_theta.
  c.rope_theta = r.number("rope_theta", r.number("rotary_emb_base", 10000.0f));
  c.norm_eps = r.number("layer_norm_eps", 1e-5f);
  c.bos_id = r.token_id("bos_token_id", 0);
  c.eos_id = r.token_id("eos_token_id", 0);
  if (r.present("rope_scaling")) fail(file, "rope_scaling on a gpt_neox model is not supported");
  out.tie_embeddings = r.boolean("tie_word_embeddings", false);
  // As llama.cpp's converter and Hugging Face compute it: int(rotary_pct * head_dim).
  const float pct = r.number("rotary_pct", 0.25f);
  if (!(pct > 0 && pct <= 1)) fail(file, "rotary_pct " + std::to_string(pct) + " is not in (0, 1]");
  if (c.n_heads > 0 && c.dim % c.n_heads == 0) {
    c.rotary_dims = int(pct * float(c.dim / c.n_heads));
    // rotary_dims 0 means every dimension here; Hugging Face would rotate none.
    if (c.rotary_dims == 0)
      fail(file, "rotary_pct " + std::to_string(pct) + " rotates no dimension of a head of " +
                     std::to_string(c.dim / c.n_heads) + ": not supported");
    if (c.rotary_dims == c.dim / c.n_heads) c.rotary_dims = 0;
  }
  c.validate(file);
  return out;
}

HfConfig read_config(const std::string& file) {
  const json j = read_json_file(file);
  if (!j.is_object()) fail(file, "config.json should hold a JSON object");
  const ConfigReader r(j, file);
  // Refuse variants whose forward pass differs from these rather than run them wrong.
  auto arch = j.find("architectures");
  const bool neox_class = arch != j.end() && arch->is_array() && !arch->empty() && arch->front() == "GPTNeoXForCausalLM";
  const std::string type = r.string("model_type").value_or(neox_class ? "gpt_neox" : "llama");
  if (type == "gpt_neox") return read_neox_config(r, file);
  if (type != "llama" && type != "mistral" && type != "qwen2")
    fail(file, "model_type " + type + " is not supported (llama, mistral, qwen2 or gpt_neox)");
  if (auto act = r.string("hidden_act"); act && *act != "silu")
    fail(file, "hidden_act " + *act + " is not supported (these models use silu)");
  // Llama's attention_bias also biases o_proj, which the forward pass has no place for.
  if ((type != "qwen2" && r.boolean("attention_bias", false)) || r.boolean("mlp_bias", false))
    fail(file, "attention_bias on a " + type + " model or mlp_bias is not supported (only Qwen2's q/k/v biases)");

  HfConfig out;
  ModelConfig& c = out.config;
  c.architecture = type;
  c.attention_bias = type == "qwen2";  // Qwen2 always biases q, k and v
  if (r.present("rope_scaling")) c.rope_scaling = read_rope_scaling(j.at("rope_scaling"), file);
  c.dim = r.integer("hidden_size", std::nullopt);
  c.hidden_dim = r.integer("intermediate_size", std::nullopt);
  c.n_layers = r.integer("num_hidden_layers", std::nullopt);
  c.n_heads = r.integer("num_attention_heads", std::nullopt);
  c.n_kv_heads = r.integer("num_key_value_heads", c.n_heads);
  c.vocab_size = r.integer("vocab_size", std::nullopt);
  c.max_seq_len = r.integer("max_position_embeddings", std::nullopt);
  c.rope_theta = r.number("rope_theta", 10000.0f);
  c.norm_eps = r.number("rms_norm_eps", 1e-6f);
  c.bos_id = r.token_id("bos_token_id", 1);
  c.eos_id = r.token_id("eos_token_id", 2);
  out.tie_embeddings = r.boolean("tie_word_embeddings", false);
  if (c.n_heads > 0 && r.present("head_dim") && r.integer("head_dim", 0) != c.dim / c.n_heads)
    fail(file, "head_dim " + std::to_string(r.integer("head_dim", 0)) + " differs from hidden_size / num_attention_heads");
  c.validate(file);
  return out;
}

// ---- one safetensors file ------------------------------------------------

struct Entry {
  DType dtype = DType::F32;
  bool supported = false;    // F32, F16 or BF16
  std::string dtype_name;    // as written, for errors
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data start
};

struct Shard {
  std::shared_ptr<MappedFile> file;
  uint64_t data_start = 0;
  std::map<std::string, Entry> entries;
};

// Element size of every dtype the format defines, so offsets of tensors we do
// not use can still be checked; 0 for names the format does not know.
int safetensors_dtype_size(const std::string& d) {
  static const std::map<std::string, int> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

uint64_t json_u64(const json& v, const std::string& file, const std::string& what) {
  if (!v.is_number_unsigned()) fail(file, what + " should be a non-negative integer");
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, const Shard& shard) {
  const std::string& file = shard.file->path();
  const std::string where = "tensor " + name;
  if (!v.is_object()) fail(file, where + ": header entry should be an object");
  auto dtype = v.find("dtype"), shape = v.find("shape"), offsets = v.find("data_offsets");
  if (dtype == v.end() || !dtype->is_string()) fail(file, where + ": missing or non-string \"dtype\"");
  if (shape == v.end() || !shape->is_array()) fail(file, where + ": missing or non-array \"shape\"");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2)
    fail(file, where + ": \"data_offsets\" should be [begin, end]");
  Entry e;
  e.dtype_name = dtype->get<std::string>();
  const int elem = safetensors_dtype_size(e.dtype_name);
  if (elem == 0) fail(file, where + ": unknown dtype " + e.dtype_name);
  e.supported = e.dtype_name == "F32" || e.dtype_name == "F16" || e.dtype_name == "BF16";
  e.dtype = e.dtype_name == "F16" ? DType::F16 : e.dtype_name == "BF16" ? DType::BF16 : DType::F32;
  uint64_t bytes = uint64_t(elem);
  for (const json& d : *shape) {
    e.shape.push_back(json_u64(d, file, where + " shape"));
    if (__builtin_mul_overflow(bytes, e.shape.back(), &bytes)) fail(file, where + ": absurd shape");
  }
  e.begin = json_u64((*offsets)[0], file, where + " data_offsets");
  e.end = json_u64((*offsets)[1], file, where + " data_offsets");
  if (e.begin > e.end) fail(file, where + ": data_offsets begin " + std::to_string(e.begin) + " > end " + std::to_string(e.end));
  const uint64_t data_size = shard.file->size() - shard.data_start;
  if (e.end > data_size)
    fail(file, where + ": data ends at byte " + std::to_string(shard.data_start + e.end) + ", past the end of the file (" +
                   std::to_string(shard.file->size()) + " bytes): truncated?");
  if (e.end - e.begin != bytes)
    fail(file, where + ": holds " + std::to_string(e.end - e.begin) + " bytes but its shape and dtype need " + std::to_string(bytes));
  return e;
}

std::shared_ptr<Shard> open_shard(const std::string& path) {
  auto shard = std::make_shared<Shard>();
  shard->file = MappedFile::open(path);
  const MappedFile& f = *shard->file;
  if (f.size() < 8) fail(path, "truncated: expected at least 8 bytes of safetensors header, file has " + std::to_string(f.size()));
  uint64_t header_len;
  std::memcpy(&header_len, f.data(), 8);
  if (header_len > f.size() - 8)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the file size (" + std::to_string(f.size()) +
                   " bytes): truncated or not a safetensors file");
  // The format's own bound (the safetensors library refuses more): a header's
  // entries, and the memory they parse into, are bounded by it.
  constexpr uint64_t kMaxHeaderBytes = 100'000'000;
  if (header_len > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_len) + " is over the format's bound of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  shard->data_start = 8 + header_len;
  const char* h = reinterpret_cast<const char*>(f.data() + 8);
  const json header = parse_json_document(h, h + header_len, path);
  if (!header.is_object()) fail(path, "safetensors header should be a JSON object");
  try {
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") continue;
      shard->entries.emplace(name, parse_entry(name, value, *shard));
    }
  } catch (const json::exception& e) {
    fail(path, "invalid safetensors header: " + one_line(e.what()));
  }
  return shard;
}

// ---- assembling the model --------------------------------------------------

class Assembler {
 public:
  Assembler(const Paths& paths, Model& model) : paths_(paths), model_(model) {}

  void index_single() {
    auto shard = load_shard(paths_.single);
    for (const auto& [name, entry] : shard->entries) where_[name] = shard;
  }

  void index_sharded() {
    const json index = read_json_file(paths_.index);
    auto map = index.is_object() ? index.find("weight_map") : index.end();
    if (!index.is_object() || map == index.end() || !map->is_object())
      fail(paths_.index, "expected an object with a \"weight_map\" of tensor name -> file");
    const fs::path folder = fs::path(paths_.index).has_parent_path() ? fs::path(paths_.index).parent_path() : fs::path(".");
    for (const auto& [name, file] : map->items()) {
      if (!file.is_string()) fail(paths_.index, "weight_map entry " + name + " should be a file name");
      const fs::path rel(file.get<std::string>());
      // Shards live beside the index; a path that escapes the folder is refused.
      for (const auto& part : rel)
        if (part == "..") fail(paths_.index, "weight_map file " + rel.string() + " leaves the model folder");
      if (rel.empty() || rel.is_absolute()) fail(paths_.index, "weight_map file name \"" + rel.string() + "\" is not a relative path");
      auto shard = load_shard((folder / rel).string());
      if (!shard->entries.count(name))
        fail(shard->file->path(), "the index lists tensor " + name + " in this file, but it is not there");
      where_[name] = shard;
    }
  }

  bool has(const std::string& name) const { return where_.count(name) != 0; }
  size_t tensor_count() const { return where_.size(); }

  // A view of tensor `name`, which must have `shape` (row-major).
  Tensor view(const std::string& name, const std::vector<int64_t>& shape) {
    auto [shard, entry] = find(name, shape);
    Tensor t;
    t.dtype = entry.dtype;
    t.rows = shape.size() == 2 ? shape[0] : 1;
    t.cols = shape.back();
    t.data = shard.file->data() + shard.data_start + entry.begin;
    // The format does not promise aligned data; copy rather than misread.
    if (reinterpret_cast<uintptr_t>(t.data) % dtype_size(t.dtype) != 0) t.data = copy(t.data, t.bytes());
    return t;
  }

  // GPT-NeoX's fused query_key_value weight (cols > 0) or bias (cols 0):
  // rows per head [q, k, v] x head_dim, each head's q and k in the half-split
  // RoPE order over the first `rotated`. Copied into q, k and v, q and k
  // interleaved, into parts[0..3).
  void split_qkv(const std::string& name, int n_heads, int head_dim, int rotated, int64_t cols, Tensor* parts) {
    const int64_t rows = 3 * int64_t(n_heads) * head_dim;
    auto [shard, entry] = find(name, cols > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows});
    const size_t row_bytes = size_t(std::max<int64_t>(cols, 1)) * dtype_size(entry.dtype);
    const uint8_t* src = shard.file->data() + shard.data_start + entry.begin;
    for (int part = 0; part < 3; ++part) {
      std::vector<uint8_t> gathered(size_t(n_heads) * head_dim * row_bytes);
      for (int h = 0; h < n_heads; ++h)
        std::memcpy(&gathered[size_t(h) * head_dim * row_bytes], src + (size_t(h) * 3 + part) * head_dim * row_bytes,
                    size_t(head_dim) * row_bytes);
      auto buf = part < 2 ? interleave_rope_rows(gathered.data(), row_bytes, n_heads, head_dim, rotated)
                          : std::make_shared<std::vector<uint8_t>>(std::move(gathered));
      model_.owned.push_back(buf);
      Tensor& t = parts[part];
      t.dtype = entry.dtype;
      t.rows = cols > 0 ? int64_t(n_heads) * head_dim : 1;
      t.cols = cols > 0 ? cols : int64_t(n_heads) * head_dim;
      t.data = buf->data();
    }
  }

  // q_proj / k_proj and their biases (cols 0: a vector), in Hugging Face's
  // half-split RoPE order: copied with each head's rows interleaved.
  Tensor unpermuted(const std::string& name, int n_heads, int head_dim, int64_t cols) {
    const int64_t rows = int64_t(n_heads) * head_dim;
    auto [shard, entry] = find(name, cols > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows});
    const size_t row_bytes = size_t(std::max<int64_t>(cols, 1)) * dtype_size(entry.dtype);
    auto buf = interleave_rope_rows(shard.file->data() + shard.data_start + entry.begin, row_bytes, n_heads, head_dim);
    model_.owned.push_back(buf);
    Tensor t;
    t.dtype = entry.dtype;
    t.rows = cols > 0 ? rows : 1;
    t.cols = cols > 0 ? cols : rows;
    t.data = buf->data();
    return t;
  }

 private:
  std::shared_ptr<Shard> load_shard(const std::string& path) {
    auto it = shards_.find(path);
    if (it != shards_.end()) return it->second;
    auto shard = open_shard(path);
    shards_.emplace(path, shard);
    model_.owned.push_back(shard->file);
    if (!model_.storage) model_.storage = shard->file;
    return shard;
  }

  std::pair<const Shard&, const Entry&> find(const std::string& name, const std::vector<int64_t>& shape) const {
    auto it = where_.find(name);
    if (it == where_.end()) fail(paths_.index.empty() ? paths_.single : paths_.index, "missing tensor " + name);
    const Shard& shard = *it->second;
    const Entry& e = shard.entries.at(name);
    const std::string& file = shard.file->path();
    if (!e.supported) fail(file, "tensor " + name + " has dtype " + e.dtype_name + "; only F32, F16 and BF16 are supported");
    bool same = e.shape.size() == shape.size();
    for (size_t d = 0; same && d < shape.size(); ++d) same = e.shape[d] == uint64_t(shape[d]);
    if (!same) fail(file, "tensor " + name + " has shape " + describe(e.shape) + ", expected " + describe(shape) + " from config.json");
    return {shard, e};
  }

  template <typename T>
  static std::string describe(const std::vector<T>& shape) {
    std::string s = "[";
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "]";
  }

  const void* copy(const void* src, int64_t bytes) {
    auto buf = std::make_shared<std::vector<uint8_t>>(size_t(bytes));
    std::memcpy(buf->data(), src, size_t(bytes));
    model_.owned.push_back(buf);
    return buf->data();
  }

  const Paths& paths_;
  Model& model_;
  std::map<std::string, std::shared_ptr<Shard>> shards_;  // by path
  std::map<std::string, std::shared_ptr<Shard>> where_;   // tensor name -> its shard
};

// GPT-NeoX's tensors (gpt_neox.*, embed_out).
void assemble_neox(Assembler& a, Model& model, bool tied) {
  const ModelConfig& c = model.config;
  const int64_t d = c.dim, hid = c.hidden_dim;
  ModelWeights& w = model.weights;
  w.token_embedding = a.view("gpt_neox.embed_in.weight", {c.vocab_size, d});
  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    LayerWeights& lw = w.layers[size_t(l)];
    lw.attn_norm = a.view(p + "input_layernorm.weight", {d});
    lw.attn_norm_bias = a.view(p + "input_layernorm.bias", {d});
    Tensor matrices[3], biases[3];
    a.split_qkv(p + "attention.query_key_value.weight", c.n_heads, c.head_dim(), c.rotary_dims, d, matrices);
    a.split_qkv(p + "attention.query_key_value.bias", c.n_heads, c.head_dim(), c.rotary_dims, 0, biases);
    lw.wq = matrices[0], lw.wk = matrices[1], lw.wv = matrices[2];
    lw.bq = biases[0], lw.bk = biases[1], lw.bv = biases[2];
    lw.wo = a.view(p + "attention.dense.weight", {d, d});
    lw.bo = a.view(p + "attention.dense.bias", {d});
    lw.ffn_norm = a.view(p + "post_attention_layernorm.weight", {d});
    lw.ffn_norm_bias = a.view(p + "post_attention_layernorm.bias", {d});
    lw.w3 = a.view(p + "mlp.dense_h_to_4h.weight", {hid, d});
    lw.b3 = a.view(p + "mlp.dense_h_to_4h.bias", {hid});
    lw.w2 = a.view(p + "mlp.dense_4h_to_h.weight", {d, hid});
    lw.b2 = a.view(p + "mlp.dense_4h_to_h.bias", {d});
  }
  w.final_norm = a.view("gpt_neox.final_layer_norm.weight", {d});
  w.final_norm_bias = a.view("gpt_neox.final_layer_norm.bias", {d});
  // Untied (the config's default) needs its own classifier: the embedding in its place would run silently wrong.
  w.classifier = tied ? w.token_embedding : a.view("embed_out.weight", {c.vocab_size, d});
}

}  // namespace

std::shared_ptr<const Model> load_safetensors(const std::string& path) {
  const Paths paths = resolve_paths(path);
  const HfConfig hf = read_config(paths.config);

  auto model = new_model(hf.config, path, "safetensors");
  const ModelConfig& c = model->config;
  const int64_t d = c.dim, hid = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();

  Assembler a(paths, *model);
  if (!paths.index.empty()) a.index_sharded();
  else a.index_single();

  // Each layer has 9 tensors: a layer count the weights cannot hold is
  // refused before anything is sized by it.
  if (uint64_t(c.n_layers) > a.tensor_count() / 9)
    fail(paths.config, "num_hidden_layers " + std::to_string(c.n_layers) + " needs more tensors than the weights' " +
                           std::to_string(a.tensor_count()));

  if (c.architecture == "gptneox") {
    assemble_neox(a, *model, hf.tie_embeddings);
    return model;
  }
  ModelWeights& w = model->weights;
  w.token_embedding = a.view("model.embed_tokens.weight", {c.vocab_size, d});
  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights& lw = w.layers[l];
    lw.attn_norm = a.view(p + "input_layernorm.weight", {d});
    lw.wq = a.unpermuted(p + "self_attn.q_proj.weight", c.n_heads, c.head_dim(), d);
    lw.wk = a.unpermuted(p + "self_attn.k_proj.weight", c.n_kv_heads, c.head_dim(), d);
    lw.wv = a.view(p + "self_attn.v_proj.weight", {kv, d});
    if (c.attention_bias) {
      lw.bq = a.unpermuted(p + "self_attn.q_proj.bias", c.n_heads, c.head_dim(), 0);
      lw.bk = a.unpermuted(p + "self_attn.k_proj.bias", c.n_kv_heads, c.head_dim(), 0);
      lw.bv = a.view(p + "self_attn.v_proj.bias", {kv});
    }
    lw.wo = a.view(p + "self_attn.o_proj.weight", {d, q});
    lw.ffn_norm = a.view(p + "post_attention_layernorm.weight", {d});
    lw.w1 = a.view(p + "mlp.gate_proj.weight", {hid, d});
    lw.w2 = a.view(p + "mlp.down_proj.weight", {d, hid});
    lw.w3 = a.view(p + "mlp.up_proj.weight", {hid, d});
  }
  w.final_norm = a.view("model.norm.weight", {d});
  const bool shared = hf.tie_embeddings || !a.has("lm_head.weight");
  w.classifier = shared ? w.token_embedding : a.view("lm_head.weight", {c.vocab_size, d});
  return model;
}

}  // namespace h2o
