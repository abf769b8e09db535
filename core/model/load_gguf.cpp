// GGUF (llama.cpp's model format), versions 2 and 3, little-endian, for
// Llama (and Mistral), Qwen2 and GPT-NeoX models stored as F32, F16, BF16 or
// any of the quantised types core/model/quant.h knows; weights stay in the
// file's type, memory-mapped (only Qwen2's and GPT-NeoX's Q/K rows are
// copied, to interleave them).
//
// Layout: "GGUF", version u32, tensor_count u64, kv_count u64, then kv_count
// metadata entries, tensor_count tensor infos, padding to the alignment, and
// the tensor data. Every read goes through ByteReader (bounds-checked), and
// every count is compared with the bytes left before anything is allocated,
// so a corrupt or hostile file yields one Error line, never a crash.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/model/model.h"
#include "core/model/quant.h"

namespace h2o {
namespace {

// Metadata value types (gguf_type).
enum GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// Tensor element types (ggml_type) this loader reads.
constexpr int kMaxDims = 4;             // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;     // deeper nesting is never legitimate; bounds the recursion
constexpr uint64_t kMinStringBytes = 8; // a string is at least its u64 length

// Every ggml type by id (ggml.c's type_traits): its name, elements and bytes
// per block, so that every tensor's size is known, used or not; block 0: an
// id ggml has removed or never had.
struct GgmlType {
  const char* name;
  uint64_t block, bytes;
};
const GgmlType& ggml_type(uint32_t t) {
  static const GgmlType types[] = {
      {"F32", 1, 4},        {"F16", 1, 2},        {"Q4_0", 32, 18},     {"Q4_1", 32, 20},    {"Q4_2", 0, 0},
      {"Q4_3", 0, 0},       {"Q5_0", 32, 22},     {"Q5_1", 32, 24},     {"Q8_0", 32, 34},    {"Q8_1", 32, 36},
      {"Q2_K", 256, 84},    {"Q3_K", 256, 110},   {"Q4_K", 256, 144},   {"Q5_K", 256, 176},  {"Q6_K", 256, 210},
      {"Q8_K", 256, 292},   {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74},  {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
      {"IQ4_NL", 32, 18},   {"IQ3_S", 256, 110},  {"IQ2_S", 256, 82},   {"IQ4_XS", 256, 136}, {"I8", 1, 1},
      {"I16", 1, 2},        {"I32", 1, 4},        {"I64", 1, 8},        {"F64", 1, 8},       {"IQ1_M", 256, 56},
      {"BF16", 1, 2},       {"Q4_0_4_4", 0, 0},   {"Q4_0_4_8", 0, 0},   {"Q4_0_8_8", 0, 0},  {"TQ1_0", 256, 54},
      {"TQ2_0", 256, 66}};
  static const GgmlType unknown{"unknown", 0, 0};
  return t < sizeof(types) / sizeof(types[0]) ? types[t] : unknown;
}
const char* ggml_type_name(uint32_t t) { return ggml_type(t).name; }

const char* gguf_type_name(uint32_t t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  return t <= kF64 ? names[t] : "unknown";
}

// Size of a fixed-size metadata value, 0 for strings, arrays and unknown types.
uint64_t scalar_size(uint32_t t) {
  switch (t) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    default: return 0;
  }
}

// One metadata value. Scalars are decoded; arrays are kept as a position in
// the file and decoded only by the few readers that need them.
struct Value {
  uint32_t type = 0;
  bool is_int = false;
  int64_t i = 0;   // integer and bool scalars (u64 values above INT64_MAX are out of range for every use here)
  double f = 0;    // float scalars
  std::string str;
  uint32_t elem_type = 0;  // arrays
  uint64_t count = 0;
  uint64_t first = 0;  // offset of the first element
};

class GgufParser {
 public:
  explicit GgufParser(const MappedFile& file) : file_(file), r_(file) {}

  std::shared_ptr<const Model> parse(std::shared_ptr<const MappedFile> keep_alive);
  GgufVocab parse_vocab();

 private:
  [[noreturn]] void error(const std::string& problem) const { fail(file_.path(), problem); }
  uint64_t remaining() const { return file_.size() - std::min<uint64_t>(r_.pos(), file_.size()); }

  void read_preamble();
  std::string read_string(const char* what);
  Value read_value(uint32_t type, const std::string& key);
  void skip_array(uint32_t elem_type, uint64_t count, int depth, const std::string& key);
  void check_count(uint64_t count, uint64_t min_bytes_each, const std::string& what);
  void read_metadata();
  void read_tensor_infos();
  // Each tensor's bytes (from its type and shape) inside the data region, at
  // an aligned offset, overlapping no other tensor: llama.cpp's gguf checks.
  void check_layout() const;
  [[noreturn]] void unsupported_type(const std::string& name, uint32_t type) const;

  // Metadata accessors; `key` names the entry in errors.
  const Value* find(const std::string& key) const;
  int get_int(const std::string& key, std::optional<int> def) const;
  float get_float(const std::string& key, float def) const;
  bool get_bool(const std::string& key, bool def) const;
  std::string get_string(const std::string& key) const;

  ModelConfig read_config() const;
  Tensor tensor(const std::string& name, int64_t rows, int64_t cols, bool required = true);
  // A float vector (norm weight or bias); GPT-NeoX's are all required.
  Tensor float_vector(const std::string& name, int64_t n);
  // Q/K rows (or bias elements) in the order every backend rotates: Qwen2 and
  // GPT-NeoX files keep RoPE's half-split order, so those are copied interleaved.
  static Tensor rope_rows(Tensor t, int n_heads, Model& model);
  // The tensors of one Llama / Qwen2 layer, and of one GPT-NeoX layer.
  void read_llama_layer(const std::string& prefix, int layer, Model& model);
  void read_neox_layer(const std::string& prefix, int layer, Model& model);
  // `rows`: the model's embedding rows, which the pieces must not outnumber.
  EmbeddedVocab read_vocab(std::optional<int> rows, int bos_id, int eos_id) const;
  std::vector<std::string> string_array(const std::string& key) const;
  const Value& array_of(const std::string& key, uint32_t elem_type) const;

  struct TensorInfo {
    std::vector<uint64_t> dims;  // fastest-varying first
    uint32_t type = 0;
    uint64_t offset = 0;
    bool used = false;
  };

  const MappedFile& file_;
  ByteReader r_;
  uint32_t version_ = 0;
  uint64_t tensor_count_ = 0, kv_count_ = 0;
  std::map<std::string, Value> kv_;
  std::map<std::string, TensorInfo> tensors_;
  uint64_t alignment_ = 32;
  uint64_t data_start_ = 0;
};

void GgufParser::read_preamble() {
  if (file_.size() < 4 || std::memcmp(file_.data(), "GGUF", 4) != 0) error("not a GGUF file (bad magic)");
  r_.seek(4);
  version_ = r_.read<uint32_t>("GGUF version");
  if (version_ == 0x02000000u || version_ == 0x03000000u) error("big-endian GGUF files are not supported");
  if (version_ != 2 && version_ != 3)
    error("unsupported GGUF version " + std::to_string(version_) + " (this reader handles versions 2 and 3)");
  tensor_count_ = r_.read<uint64_t>("tensor count");
  kv_count_ = r_.read<uint64_t>("metadata count");
  // A metadata entry is at least a key length, a type and one byte of value;
  // a tensor info at least a name length, n_dims, a type and an offset.
  check_count(kv_count_, kMinStringBytes + 4 + 1, "metadata count");
  check_count(tensor_count_, kMinStringBytes + 4 + 4 + 8, "tensor count");
}

void GgufParser::check_count(uint64_t count, uint64_t min_bytes_each, const std::string& what) {
  if (count > remaining() / min_bytes_each)
    error(what + " " + std::to_string(count) + " cannot fit in the " + std::to_string(remaining()) +
          " bytes left (corrupt or truncated file)");
}

std::string GgufParser::read_string(const char* what) {
  const uint64_t len = r_.read<uint64_t>(what);
  if (len > remaining())
    error(std::string(what) + " length " + std::to_string(len) + " at byte " + std::to_string(r_.pos() - 8) +
          " runs past the end of the file (" + std::to_string(file_.size()) + " bytes)");
  const uint8_t* p = r_.bytes(len, what);
  return std::string(reinterpret_cast<const char*>(p), len);
}

Value GgufParser::read_value(uint32_t type, const std::string& key) {
  Value v;
  v.type = type;
  switch (type) {
    case kU8: v.i = r_.read<uint8_t>("metadata value"); v.is_int = true; break;
    case kI8: v.i = r_.read<int8_t>("metadata value"); v.is_int = true; break;
    case kU16: v.i = r_.read<uint16_t>("metadata value"); v.is_int = true; break;
    case kI16: v.i = r_.read<int16_t>("metadata value"); v.is_int = true; break;
    case kU32: v.i = r_.read<uint32_t>("metadata value"); v.is_int = true; break;
    case kI32: v.i = r_.read<int32_t>("metadata value"); v.is_int = true; break;
    case kU64: {
      const uint64_t u = r_.read<uint64_t>("metadata value");
      v.i = u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);  // saturate: any such value fails range checks
      v.is_int = true;
      break;
    }
    case kI64: v.i = r_.read<int64_t>("metadata value"); v.is_int = true; break;
    case kBool: {
      const uint8_t b = r_.read<uint8_t>("metadata value");
      if (b > 1) error("metadata " + key + ": bool value " + std::to_string(b) + " is neither 0 nor 1");
      v.i = b;
      break;
    }
    case kF32: v.f = r_.read<float>("metadata value"); break;
    case kF64: v.f = r_.read<double>("metadata value"); break;
    case kString: v.str = read_string("metadata string"); break;
    case kArray: {
      v.elem_type = r_.read<uint32_t>("metadata array type");
      v.count = r_.read<uint64_t>("metadata array count");
      v.first = r_.pos();
      skip_array(v.elem_type, v.count, 1, key);
      break;
    }
    default:
      error("metadata " + key + " has unknown value type " + std::to_string(type));
  }
  return v;
}

// Walks over an array's elements (recursively for arrays of arrays), checking
// each count against the bytes left before looping over it.
void GgufParser::skip_array(uint32_t elem_type, uint64_t count, int depth, const std::string& key) {
  if (depth > kMaxArrayNesting) error("metadata " + key + ": arrays nested deeper than " + std::to_string(kMaxArrayNesting));
  const std::string what = "metadata " + key + " array count";
  if (const uint64_t size = scalar_size(elem_type)) {
    check_count(count, size, what);
    r_.seek(r_.pos() + count * size);
    return;
  }
  if (elem_type == kString) {
    check_count(count, kMinStringBytes, what);
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t len = r_.read<uint64_t>("metadata string");
      if (len > remaining()) error("metadata " + key + ": string length " + std::to_string(len) + " runs past the end of the file");
      r_.seek(r_.pos() + len);
    }
    return;
  }
  if (elem_type == kArray) {
    check_count(count, 4 + 8, what);
    for (uint64_t i = 0; i < count; ++i) {
      const uint32_t inner = r_.read<uint32_t>("metadata array type");
      const uint64_t n = r_.read<uint64_t>("metadata array count");
      skip_array(inner, n, depth + 1, key);
    }
    return;
  }
  error("metadata " + key + ": array of unknown type " + std::to_string(elem_type));
}

void GgufParser::read_metadata() {
  for (uint64_t i = 0; i < kv_count_; ++i) {
    std::string key = read_string("metadata key");
    const uint32_t type = r_.read<uint32_t>("metadata type");
    Value v = read_value(type, key);
    if (!kv_.emplace(key, std::move(v)).second) error("duplicate metadata key " + key);
  }
  if (const Value* a = find("general.alignment")) {
    if (!a->is_int || a->i <= 0 || a->i > (1 << 20) || (a->i & (a->i - 1)) != 0)
      error("general.alignment must be a power of two, got " + (a->is_int ? std::to_string(a->i) : std::string("a non-integer")));
    alignment_ = uint64_t(a->i);
  }
}

void GgufParser::read_tensor_infos() {
  for (uint64_t i = 0; i < tensor_count_; ++i) {
    std::string name = read_string("tensor name");
    TensorInfo info;
    const uint32_t n_dims = r_.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      error("tensor " + name + " has " + std::to_string(n_dims) + " dimensions (expected 1 to " + std::to_string(kMaxDims) + ")");
    for (uint32_t d = 0; d < n_dims; ++d) info.dims.push_back(r_.read<uint64_t>("tensor dimension"));
    info.type = r_.read<uint32_t>("tensor type");
    info.offset = r_.read<uint64_t>("tensor offset");
    if (!tensors_.emplace(name, std::move(info)).second) error("duplicate tensor " + name);
  }
  // The data section starts at the next multiple of the alignment.
  const uint64_t end = r_.pos();
  data_start_ = end + (alignment_ - end % alignment_) % alignment_;
  if (data_start_ > file_.size())
    error("truncated: tensor data would start at byte " + std::to_string(data_start_) + ", file has " +
          std::to_string(file_.size()));
  check_layout();
}

void GgufParser::unsupported_type(const std::string& name, uint32_t type) const {
  error("tensor " + name + " has type " + ggml_type_name(type) + " (" + std::to_string(type) +
        "), which this reader does not support (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, "
        "Q5_K, Q6_K)");
}

void GgufParser::check_layout() const {
  const uint64_t data_size = file_.size() - data_start_;
  struct Extent {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Extent> extents;
  for (const auto& [name, info] : tensors_) {
    const GgmlType& type = ggml_type(info.type);
    if (!quant_type_from_id(info.type)) unsupported_type(name, info.type);
    uint64_t elements = 1;
    for (uint64_t d : info.dims) {
      if (d != 0 && elements > UINT64_MAX / d) error("tensor " + name + " has an absurd shape");
      elements *= d;
    }
    if (info.dims[0] % type.block != 0)
      error("tensor " + name + " has rows of " + std::to_string(info.dims[0]) + " elements, not whole blocks of " +
            type.name + " (" + std::to_string(type.block) + " each)");
    if (elements / type.block > UINT64_MAX / type.bytes) error("tensor " + name + " has an absurd shape");
    const uint64_t bytes = elements / type.block * type.bytes;
    const std::string where = " (" + std::string(type.name) + ", " + std::to_string(bytes) + " bytes at offset " +
                              std::to_string(info.offset) + ")";
    if (info.offset % alignment_ != 0)
      error("tensor " + name + " offset " + std::to_string(info.offset) + " is not a multiple of the alignment " +
            std::to_string(alignment_));
    if (info.offset > data_size || bytes > data_size - info.offset)
      error("tensor " + name + where + " runs past the end of the file's " + std::to_string(data_size) +
            " data bytes: truncated, or its type or shape is not what was written");
    if (bytes > 0) extents.push_back({info.offset, info.offset + bytes, &name});
  }
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i].begin < extents[i - 1].end)
      error("tensors " + *extents[i - 1].name + " and " + *extents[i].name + " overlap (bytes " +
            std::to_string(extents[i].begin) + " to " + std::to_string(extents[i - 1].end) +
            " of the data): a tensor's type, shape or offset is not what was written");
}

const Value* GgufParser::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

int GgufParser::get_int(const std::string& key, std::optional<int> def) const {
  const Value* v = find(key);
  if (!v) {
    if (!def) error("missing metadata " + key);
    return *def;
  }
  if (!v->is_int) error("metadata " + key + " should be an integer, is " + gguf_type_name(v->type));
  if (v->i < 0 || v->i > INT32_MAX) error("metadata " + key + " = " + std::to_string(v->i) + " is out of range");
  return int(v->i);
}

float GgufParser::get_float(const std::string& key, float def) const {
  const Value* v = find(key);
  if (!v) return def;
  if (v->type == kF32 || v->type == kF64) return float(v->f);
  if (v->is_int) return float(v->i);
  error("metadata " + key + " should be a number, is " + gguf_type_name(v->type));
}

bool GgufParser::get_bool(const std::string& key, bool def) const {
  const Value* v = find(key);
  if (!v) return def;
  if (v->type != kBool) error("metadata " + key + " should be a bool, is " + gguf_type_name(v->type));
  return v->i != 0;
}

std::string GgufParser::get_string(const std::string& key) const {
  const Value* v = find(key);
  if (!v) error("missing metadata " + key);
  if (v->type != kString) error("metadata " + key + " should be a string, is " + gguf_type_name(v->type));
  return v->str;
}

ModelConfig GgufParser::read_config() const {
  const std::string arch = find("general.architecture") ? get_string("general.architecture") : "";
  if (arch != "llama" && arch != "qwen2" && arch != "gptneox")
    error(arch.empty() ? "missing general.architecture (expected llama, qwen2 or gptneox)"
                       : "architecture " + arch + " is not supported (llama, qwen2 or gptneox; Mistral files say llama)");
  // Every model key is prefixed by the architecture's name.
  const auto key = [&](const char* name) { return arch + "." + name; };
  ModelConfig c;
  c.architecture = arch;
  const bool neox = arch == "gptneox";
  c.attention_bias = arch == "qwen2" || neox;  // Qwen2 and GPT-NeoX bias q, k and v
  if (neox) {  // LayerNorm, a GELU MLP, biases on every projection
    c.norm = NormKind::Layer;
    c.ffn = FfnKind::Gelu;
    c.output_bias = true;
    // llama.cpp requires the key; Hugging Face's default is parallel.
    c.parallel_residual = get_bool(key("use_parallel_residual"), true);
  }
  c.dim = get_int(key("embedding_length"), std::nullopt);
  c.hidden_dim = get_int(key("feed_forward_length"), std::nullopt);
  c.n_layers = get_int(key("block_count"), std::nullopt);
  c.n_heads = get_int(key("attention.head_count"), std::nullopt);
  c.n_kv_heads = get_int(key("attention.head_count_kv"), c.n_heads);
  c.max_seq_len = get_int(key("context_length"), std::nullopt);
  c.rope_theta = get_float(key("rope.freq_base"), 10000.0f);
  c.norm_eps = get_float(key(neox ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"), 1e-5f);
  c.bos_id = get_int("tokenizer.ggml.bos_token_id", 1);
  c.eos_id = get_int("tokenizer.ggml.eos_token_id", 2);
  if (find(key("rope.scaling.type"))) {
    const std::string type = get_string(key("rope.scaling.type"));
    if (type == "linear") {
      c.rope_scaling.type = "linear";
      c.rope_scaling.factor = get_float(key("rope.scaling.factor"), 1.0f);
    } else if (type != "none") {
      error(key("rope.scaling.type") + " '" + type + "' is not supported (none or linear; Llama 3.1's comes as rope_freqs)");
    }
  }
  // The vocabulary size is the embedding's row count: GGUF dims are {dim, vocab}.
  auto emb = tensors_.find("token_embd.weight");
  if (emb == tensors_.end()) error("missing tensor token_embd.weight");
  const auto& dims = emb->second.dims;
  if (dims.size() < 2 || dims[1] == 0 || dims[1] > uint64_t(INT32_MAX))
    error("tensor token_embd.weight has an unusable shape");
  c.vocab_size = int(dims[1]);
  if (find(key("vocab_size")) && get_int(key("vocab_size"), 0) != c.vocab_size)
    error(key("vocab_size") + " " + std::to_string(get_int(key("vocab_size"), 0)) +
          " disagrees with token_embd.weight rows " + std::to_string(c.vocab_size));
  // GPT-NeoX rotates only the first rope.dimension_count of each head
  // (validate refuses a count that is not whole pairs within the head).
  if (neox && find(key("rope.dimension_count"))) {
    c.rotary_dims = get_int(key("rope.dimension_count"), 0);
    // rotary_dims 0 means every dimension here; llama.cpp and Hugging Face would rotate none.
    if (c.rotary_dims == 0) error(key("rope.dimension_count") + " 0: a model that rotates no dimension is not supported");
  }
  if (c.rotary_dims == c.head_dim()) c.rotary_dims = 0;
  c.validate(file_.path());
  if (!neox && find(key("rope.dimension_count")) && get_int(key("rope.dimension_count"), 0) != c.head_dim())
    error(key("rope.dimension_count") + " " + std::to_string(get_int(key("rope.dimension_count"), 0)) +
          " differs from the head dimension " + std::to_string(c.head_dim()) + " (partial RoPE is not supported)");
  // Each layer has at least 9 tensors: a block count the file cannot hold is
  // refused before anything is sized by it.
  if (uint64_t(c.n_layers) > tensor_count_ / 9)
    error(key("block_count") + " " + std::to_string(c.n_layers) + " needs more tensors than the file's " +
          std::to_string(tensor_count_));
  return c;
}

// The view of one tensor with its expected shape [rows, cols] (a vector:
// rows 1); `required` false returns an empty Tensor when it is absent.
Tensor GgufParser::tensor(const std::string& name, int64_t rows, int64_t cols, bool required) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    if (required) error("missing tensor " + name);
    return Tensor{};
  }
  TensorInfo& info = it->second;
  info.used = true;
  const std::optional<DType> type = quant_type_from_id(info.type);
  if (!type) unsupported_type(name, info.type);
  const DType dtype = *type;
  // dims[0] is the row length; trailing dims of 1 are padding.
  uint64_t actual_rows = 1;
  for (size_t d = 1; d < info.dims.size(); ++d) {
    if (info.dims[d] != 0 && actual_rows > UINT64_MAX / info.dims[d]) error("tensor " + name + " has an absurd shape");
    actual_rows *= info.dims[d];
  }
  if (info.dims[0] != uint64_t(cols) || actual_rows != uint64_t(rows)) {
    std::string shape;
    for (size_t d = 0; d < info.dims.size(); ++d) shape += (d ? ", " : "") + std::to_string(info.dims[d]);
    error("tensor " + name + " has dims {" + shape + "}, expected {" + std::to_string(cols) +
          (rows > 1 ? ", " + std::to_string(rows) : std::string()) + "} for this model's config");
  }
  // Whole blocks, inside the data, aligned: check_layout saw to it.
  Tensor t;
  t.dtype = dtype;
  t.rows = rows;
  t.cols = cols;
  t.data = file_.data() + data_start_ + info.offset;
  const int64_t blocks = t.bytes() / int64_t(block_bytes(dtype));
  if (const int64_t bad = first_nonfinite_scale(dtype, t.data, blocks); bad >= 0)
    error("tensor " + name + " (" + quant_type_name(dtype) + "): block " + std::to_string(bad) +
          " has a NaN or infinite scale, so its data is not " + quant_type_name(dtype) +
          " (a retyped or corrupt tensor)");
  if (is_float(dtype) && reinterpret_cast<uintptr_t>(t.data) % dtype_size(dtype) != 0)
    error("tensor " + name + " is not aligned for " + dtype_name(dtype) + " access");
  return t;
}

Tensor GgufParser::float_vector(const std::string& name, int64_t n) {
  const Tensor t = tensor(name, 1, n);
  if (!is_float(t.dtype)) error("tensor " + name + " is quantised (" + quant_type_name(t.dtype) + "); vectors must be floats");
  return t;
}

Tensor GgufParser::rope_rows(Tensor t, int n_heads, Model& model) {
  const ModelConfig& c = model.config;
  if (c.architecture != "qwen2" && c.architecture != "gptneox") return t;
  const bool vector = t.rows == 1;  // a bias: each element is a "row" (biases are checked to be floats)
  const size_t unit = vector ? size_t(dtype_size(t.dtype)) : size_t(t.row_bytes());
  auto copy = interleave_rope_rows(static_cast<const uint8_t*>(t.data), unit, n_heads, c.head_dim(), c.rotary_dims);
  t.data = copy->data();
  model.owned.push_back(std::move(copy));
  return t;
}

const Value& GgufParser::array_of(const std::string& key, uint32_t elem_type) const {
  const Value* v = find(key);
  if (!v) error("missing metadata " + key);
  if (v->type != kArray || v->elem_type != elem_type)
    error("metadata " + key + " should be an array of " + gguf_type_name(elem_type));
  return *v;
}

std::vector<std::string> GgufParser::string_array(const std::string& key) const {
  const Value& v = array_of(key, kString);
  ByteReader r(file_, v.first);
  std::vector<std::string> out;
  out.reserve(v.count);  // the count was checked against the file size while skipping
  for (uint64_t i = 0; i < v.count; ++i) {
    const uint64_t len = r.read<uint64_t>("metadata string");
    const uint8_t* p = r.bytes(len, "metadata string");
    out.emplace_back(reinterpret_cast<const char*>(p), len);
  }
  return out;
}

EmbeddedVocab GgufParser::read_vocab(std::optional<int> rows, int bos_id, int eos_id) const {
  EmbeddedVocab vocab;
  vocab.model = get_string("tokenizer.ggml.model");
  vocab.pieces = string_array("tokenizer.ggml.tokens");
  const size_t n = vocab.pieces.size();
  if (n == 0) error("tokenizer.ggml.tokens has no pieces");
  // Some files pad the embedding past the tokenizer's pieces; the reverse
  // would let the tokenizer emit ids the model has no row for.
  if (rows && n > size_t(*rows))
    error("tokenizer.ggml.tokens has " + std::to_string(n) + " pieces for a model vocabulary of " +
          std::to_string(*rows));
  vocab.scores.assign(n, 0.0f);
  if (find("tokenizer.ggml.scores")) {
    const Value& v = array_of("tokenizer.ggml.scores", kF32);
    if (v.count != n) error("tokenizer.ggml.scores has " + std::to_string(v.count) + " entries for " + std::to_string(n) + " tokens");
    std::memcpy(vocab.scores.data(), file_.at(v.first, n * 4, "tokenizer scores"), n * 4);
  }
  vocab.types.assign(n, 1);  // normal pieces unless the file says otherwise
  if (find("tokenizer.ggml.token_type")) {
    const Value& v = array_of("tokenizer.ggml.token_type", kI32);
    if (v.count != n)
      error("tokenizer.ggml.token_type has " + std::to_string(v.count) + " entries for " + std::to_string(n) + " tokens");
    std::memcpy(vocab.types.data(), file_.at(v.first, n * 4, "tokenizer token types"), n * 4);
  }
  vocab.unk_id = get_int("tokenizer.ggml.unknown_token_id", 0);
  vocab.add_space_prefix = get_bool("tokenizer.ggml.add_space_prefix", true);
  if (find("tokenizer.chat_template")) vocab.chat_template = get_string("tokenizer.chat_template");
  // Byte-level BPE: merges and pre-tokenizer; tokenizer_from_vocab says what is missing.
  if (find("tokenizer.ggml.merges")) vocab.merges = string_array("tokenizer.ggml.merges");
  if (find("tokenizer.ggml.pre")) vocab.pre = get_string("tokenizer.ggml.pre");
  // GPT-NeoX vocabularies written before the key existed (llama.cpp's own
  // ggml-vocab-gpt-neox.gguf) have none; llama.cpp's converter calls them "mpt".
  if (vocab.pre.empty() && vocab.model == "gpt2" && find("general.architecture") &&
      get_string("general.architecture") == "gptneox")
    vocab.pre = "mpt";
  vocab.eot_id = get_int("tokenizer.ggml.eot_token_id", -1);
  vocab.pad_id = get_int("tokenizer.ggml.padding_token_id", -1);
  if (find("tokenizer.ggml.add_bos_token")) vocab.add_bos = get_bool("tokenizer.ggml.add_bos_token", true);
  // -1 is "absent" (get_int refuses negative values in the file).
  auto check_id = [&](int id, const char* what) {
    if (id != -1 && (id < 0 || size_t(id) >= n))
      error(std::string(what) + " " + std::to_string(id) + " is outside the tokenizer's " + std::to_string(n) + " pieces");
  };
  check_id(vocab.unk_id, "tokenizer.ggml.unknown_token_id");
  check_id(bos_id, "tokenizer.ggml.bos_token_id");
  check_id(eos_id, "tokenizer.ggml.eos_token_id");
  check_id(vocab.eot_id, "tokenizer.ggml.eot_token_id");
  check_id(vocab.pad_id, "tokenizer.ggml.padding_token_id");
  return vocab;
}

GgufVocab GgufParser::parse_vocab() {
  read_preamble();
  read_metadata();
  if (!find("tokenizer.ggml.model")) error("has no vocabulary (no tokenizer.ggml.model)");
  GgufVocab out;
  // SentencePiece files default to <s> = 1 and </s> = 2 (llama.cpp does the
  // same); other vocabularies have no such convention.
  const bool sentencepiece = get_string("tokenizer.ggml.model") == "llama";
  out.bos_id = get_int("tokenizer.ggml.bos_token_id", sentencepiece ? 1 : -1);
  out.eos_id = get_int("tokenizer.ggml.eos_token_id", sentencepiece ? 2 : -1);
  out.vocab = read_vocab(std::nullopt, out.bos_id, out.eos_id);
  return out;
}

void GgufParser::read_llama_layer(const std::string& p, int l, Model& model) {
  const ModelConfig& c = model.config;
  const int64_t d = c.dim, hid = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  LayerWeights& lw = model.weights.layers[size_t(l)];
  lw.attn_norm = tensor(p + "attn_norm.weight", 1, d);
  // llama.cpp's converter permuted Llama's Q/K rows to interleaved pairs;
  // Qwen2's stay in the half-split (NEOX) order, and are interleaved here.
  lw.wq = rope_rows(tensor(p + "attn_q.weight", q, d), c.n_heads, model);
  lw.wk = rope_rows(tensor(p + "attn_k.weight", kv, d), c.n_kv_heads, model);
  lw.wv = tensor(p + "attn_v.weight", kv, d);
  if (c.attention_bias) {
    lw.bq = tensor(p + "attn_q.bias", 1, q);
    lw.bk = tensor(p + "attn_k.bias", 1, kv);
    lw.bv = tensor(p + "attn_v.bias", 1, kv);
    for (const Tensor* b : {&lw.bq, &lw.bk, &lw.bv})
      if (!is_float(b->dtype)) error("layer " + std::to_string(l) + " has a quantised attention bias");
    lw.bq = rope_rows(lw.bq, c.n_heads, model);
    lw.bk = rope_rows(lw.bk, c.n_kv_heads, model);
  }
  lw.wo = tensor(p + "attn_output.weight", d, q);
  lw.ffn_norm = tensor(p + "ffn_norm.weight", 1, d);
  lw.w1 = tensor(p + "ffn_gate.weight", hid, d);
  lw.w2 = tensor(p + "ffn_down.weight", d, hid);
  lw.w3 = tensor(p + "ffn_up.weight", hid, d);
}

// Rows [first, first + rows) of a matrix, or elements of a vector: a view
// (quantised rows are whole blocks, so any row starts a block).
Tensor slice(const Tensor& t, int64_t first, int64_t count) {
  Tensor s = t;
  const bool vector = t.rows == 1;
  s.data = static_cast<const uint8_t*>(t.data) + first * (vector ? int64_t(dtype_size(t.dtype)) : t.row_bytes());
  (vector ? s.cols : s.rows) = count;
  return s;
}

// GPT-NeoX as llama.cpp's converter writes it: q, k and v fused into
// attn_qkv, rows [Q of every head; K; V] (the converter undid Hugging Face's
// per-head interleave), each head in RoPE's half-split order.
void GgufParser::read_neox_layer(const std::string& p, int l, Model& model) {
  const ModelConfig& c = model.config;
  const int64_t d = c.dim, hid = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  LayerWeights& lw = model.weights.layers[size_t(l)];
  lw.attn_norm = float_vector(p + "attn_norm.weight", d);
  lw.attn_norm_bias = float_vector(p + "attn_norm.bias", d);
  const Tensor qkv = tensor(p + "attn_qkv.weight", q + 2 * kv, d);
  const Tensor qkv_bias = float_vector(p + "attn_qkv.bias", q + 2 * kv);
  lw.wq = rope_rows(slice(qkv, 0, q), c.n_heads, model);
  lw.wk = rope_rows(slice(qkv, q, kv), c.n_kv_heads, model);
  lw.wv = slice(qkv, q + kv, kv);
  lw.bq = rope_rows(slice(qkv_bias, 0, q), c.n_heads, model);
  lw.bk = rope_rows(slice(qkv_bias, q, kv), c.n_kv_heads, model);
  lw.bv = slice(qkv_bias, q + kv, kv);
  lw.wo = tensor(p + "attn_output.weight", d, q);
  lw.bo = float_vector(p + "attn_output.bias", d);
  lw.ffn_norm = float_vector(p + "ffn_norm.weight", d);
  lw.ffn_norm_bias = float_vector(p + "ffn_norm.bias", d);
  lw.w3 = tensor(p + "ffn_up.weight", hid, d);
  lw.b3 = float_vector(p + "ffn_up.bias", hid);
  lw.w2 = tensor(p + "ffn_down.weight", d, hid);
  lw.b2 = float_vector(p + "ffn_down.bias", d);
}

std::shared_ptr<const Model> GgufParser::parse(std::shared_ptr<const MappedFile> keep_alive) {
  read_preamble();
  read_metadata();
  if (tensor_count_ == 0)
    error(find("tokenizer.ggml.model") ? "has no tensors: it holds only a vocabulary (give it as --tokenizer), not a model"
                                       : "has no tensors");
  read_tensor_infos();

  auto model = std::make_shared<Model>();
  model->config = read_config();
  model->path = file_.path();
  model->format = "gguf";
  const ModelConfig& c = model->config;
  const int64_t d = c.dim;

  ModelWeights& w = model->weights;
  w.token_embedding = tensor("token_embd.weight", c.vocab_size, d);
  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    if (c.architecture == "gptneox") read_neox_layer(p, l, *model);
    else read_llama_layer(p, l, *model);
  }
  w.final_norm = tensor("output_norm.weight", 1, d);
  if (c.norm == NormKind::Layer) w.final_norm_bias = float_vector("output_norm.bias", d);
  // Llama 3.1's RoPE scaling, as the converter stores it: one divisor per rotated pair.
  if (tensors_.count("rope_freqs.weight")) {
    const Tensor f = tensor("rope_freqs.weight", 1, c.head_dim() / 2);
    if (f.dtype != DType::F32) error("tensor rope_freqs.weight should be F32");
    model->config.rope_scaling.freq_factors.assign(f.f32(), f.f32() + f.cols);
    model->config.validate(file_.path());
  }
  // Llama-family files may tie the classifier to the embedding; GPT-NeoX's never do (llama.cpp requires it).
  w.classifier = tensor("output.weight", c.vocab_size, d, /*required=*/c.architecture == "gptneox");
  if (!w.classifier.data) w.classifier = w.token_embedding;  // tied embeddings
  for (const auto& [name, info] : tensors_)
    if (!info.used && name.rfind("blk.", 0) == 0) {
      // A layer tensor we do not use means a block count or architecture we misread.
      const int layer = std::atoi(name.c_str() + 4);
      if (layer >= c.n_layers)
        error("tensor " + name + " belongs to a layer beyond " + c.architecture + ".block_count " +
              std::to_string(c.n_layers));
    }
  if (find("tokenizer.ggml.model")) model->vocab = read_vocab(c.vocab_size, c.bos_id, c.eos_id);
  model->storage = std::move(keep_alive);
  return model;
}

}  // namespace

std::shared_ptr<const Model> load_gguf(const std::string& path) {
  auto file = MappedFile::open(path);
  GgufParser parser(*file);
  return parser.parse(file);
}

GgufVocab load_gguf_vocab(const std::string& path) {
  auto file = MappedFile::open(path);
  GgufParser parser(*file);
  return parser.parse_vocab();
}

}  // namespace h2o
