// Random-weight models at the shapes of real Llama, Qwen2 and Pythia checkpoints, for
// benchmarks and tests where no weights file is at hand (or the real one is
// far too large to ship). The weights are a pure function of (shape, seed,
// dtype, vocab, context): chunks of each tensor are generated from their own
// derived seeds, so the result does not depend on the number of threads.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/system_limits.h"
#include "core/base/thread_pool.h"
#include "core/model/model.h"
#include "core/model/quant.h"

namespace h2o {
namespace {

struct Shape {
  const char* name;
  int dim, hidden, layers, heads, kv_heads, vocab, seq_len;
  float norm_eps;
  bool shared_classifier;  // llama2.c's TinyStories models and Qwen2 tie it to the embedding
  const char* architecture = "llama";
  float rope_theta = 10000.0f;
  bool attention_bias = false;
  // GPT-NeoX (Pythia): LayerNorm, GELU MLP, biases everywhere, parallel
  // residual, RoPE on the first rotary_dims of each head (0: all of them).
  int rotary_dims = 0;
};

constexpr Shape kShapes[] = {
    {"stories260K", 64, 172, 5, 8, 4, 512, 512, 1e-5f, true},
    {"stories15M", 288, 768, 6, 6, 6, 32000, 256, 1e-5f, true},
    {"stories42M", 512, 1376, 8, 8, 8, 32000, 1024, 1e-5f, true},
    {"stories110M", 768, 2048, 12, 12, 12, 32000, 1024, 1e-5f, true},
    {"tinyllama-1.1b", 2048, 5632, 22, 32, 4, 32000, 2048, 1e-5f, false},
    {"llama2-7b", 4096, 11008, 32, 32, 32, 32000, 4096, 1e-5f, false},
    // Rows of 256: every quantised type, K-quants included, holds every matrix (quantised-file tests).
    {"test-256", 256, 512, 2, 4, 2, 512, 512, 1e-5f, true},
    // Qwen2's forward pass (q/k/v biases, theta 1e6) at a test size, and at Qwen2-0.5B's real shape.
    {"qwen2-260K", 64, 172, 3, 8, 2, 512, 512, 1e-6f, true, "qwen2", 1e6f, true},
    {"qwen2-0.5b", 896, 4864, 24, 14, 2, 151936, 32768, 1e-6f, true, "qwen2", 1e6f, true},
    // GPT-NeoX at a test size (rotary: 2 of 8 pairs, Pythia's 25 %; rows of
    // 32 for Q8_0), and at Pythia's real shapes; Pythia's classifier is untied.
    {"pythia-test", 64, 256, 3, 4, 4, 512, 512, 1e-5f, false, "gptneox", 10000.0f, true, 4},
    {"pythia-70m", 512, 2048, 6, 8, 8, 50304, 2048, 1e-5f, false, "gptneox", 10000.0f, true, 16},
    {"pythia-410m", 1024, 4096, 24, 16, 16, 50304, 2048, 1e-5f, false, "gptneox", 10000.0f, true, 16},
    {"pythia-1.4b", 2048, 8192, 24, 16, 16, 50304, 2048, 1e-5f, false, "gptneox", 10000.0f, true, 32},
    {"pythia-2.8b", 2560, 10240, 32, 32, 32, 50304, 2048, 1e-5f, false, "gptneox", 10000.0f, true, 20},
};

const Shape* find_shape(const std::string& name) {
  for (const Shape& s : kShapes)
    if (name == s.name) return &s;
  return nullptr;
}

std::string known_shapes() {
  std::string known;
  for (const Shape& s : kShapes) known += (known.empty() ? "" : ", ") + std::string(s.name);
  return known;
}

const Shape& shape_or_fail(const std::string& name) {
  if (const Shape* s = find_shape(name)) return *s;
  fail("synthetic:" + name, "unknown synthetic shape (known: " + known_shapes() + ")");
}

// splitmix64: a fast, well-mixed generator whose state is a single counter,
// so any chunk can start from a seed derived from its coordinates.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t chunk_seed(uint64_t seed, uint64_t tensor, uint64_t chunk) {
  uint64_t s = seed ^ (tensor * 0xd1b54a32d192ed03ull);
  s = splitmix64(s) ^ (chunk * 0xabc98388fb8fac03ull);
  return splitmix64(s);
}

// Uniform in [-1, 1) from the top 24 bits (exactly representable in float).
float uniform_pm1(uint64_t& state) {
  return float(int64_t(splitmix64(state) >> 40) - (int64_t(1) << 23)) * (1.0f / float(1 << 23));
}

// One tensor to fill: where it lives in the buffer and how its values are drawn.
struct Plan {
  Tensor* tensor;
  size_t offset;  // bytes into the buffer
  float center;   // values are center + scale * U(-1, 1)
  float scale;
};

constexpr int64_t kChunk = 1 << 16;  // elements per independently seeded chunk
constexpr size_t kAlign = 64;        // each tensor starts on a cache line

// Writes n values (whole blocks) to dst in `dtype`; a separate pass per type
// keeps the generation loop free of branches so the compiler can vectorise it.
void store(const float* src, int64_t n, DType dtype, void* dst) {
  switch (dtype) {
    case DType::F32:
      std::memcpy(dst, src, size_t(n) * sizeof(float));
      break;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = f32_to_f16(src[i]);
      break;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = f32_to_bf16(src[i]);
      break;
    default:
      quantize_row(dtype, src, dst, n);  // blocks never straddle rows: rows are whole blocks
      break;
  }
}

// Fills every tensor, chunk by chunk; tells `progress` after each chunk and
// stops (throwing LoadCancelled) once it returns false.
void fill(const std::vector<Plan>& plans, uint8_t* buffer, uint64_t seed, const LoadProgress& progress,
          const std::string& what) {
  struct Job {
    int plan;
    int64_t chunk;
  };
  std::vector<Job> jobs;
  for (int p = 0; p < int(plans.size()); ++p)
    for (int64_t c = 0; c * kChunk < plans[p].tensor->numel(); ++c) jobs.push_back({p, c});
  std::atomic<int64_t> done{0};
  std::atomic<bool> stopped{false};
  const auto total = int64_t(jobs.size());
  ThreadPool pool(hardware_threads());
  pool.parallel_for(int(jobs.size()), 4, [&](int first, int last) {
    std::vector<float> values(kChunk);
    for (int j = first; j < last && !stopped.load(std::memory_order_relaxed); ++j) {
      const Plan& plan = plans[jobs[j].plan];
      const Tensor& t = *plan.tensor;
      uint64_t state = chunk_seed(seed, uint64_t(jobs[j].plan), uint64_t(jobs[j].chunk));
      const int64_t begin = jobs[j].chunk * kChunk, n = std::min(t.numel() - begin, kChunk);
      const float center = plan.center, scale = plan.scale;
      for (int64_t i = 0; i < n; ++i) values[i] = center + scale * uniform_pm1(state);
      const size_t at = size_t(begin / block_size(t.dtype)) * block_bytes(t.dtype);
      store(values.data(), n, t.dtype, buffer + plan.offset + at);
      if (progress && !progress(done.fetch_add(1, std::memory_order_relaxed) + 1, total)) stopped = true;
    }
  });
  if (stopped) throw LoadCancelled(what + ": loading was cancelled");
}

// Parses a whole decimal field of a synthetic path or fails naming the path.
uint64_t parse_number(const std::string& text, const std::string& path, const std::string& field) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end) fail(path, field + " should be a non-negative integer, got \"" + text + "\"");
  return v;
}

}  // namespace

ModelConfig synthetic_shape(const std::string& name) {
  const Shape& s = shape_or_fail(name);
  ModelConfig c;
  c.dim = s.dim;
  c.hidden_dim = s.hidden;
  c.n_layers = s.layers;
  c.n_heads = s.heads;
  c.n_kv_heads = s.kv_heads;
  c.vocab_size = s.vocab;
  c.max_seq_len = s.seq_len;
  c.norm_eps = s.norm_eps;
  c.rope_theta = s.rope_theta;
  c.architecture = s.architecture;
  c.attention_bias = s.attention_bias;
  c.bos_id = 1;
  c.eos_id = 2;
  if (c.architecture == "gptneox") {
    c.norm = NormKind::Layer;
    c.ffn = FfnKind::Gelu;
    c.output_bias = true;
    c.parallel_residual = true;
    c.rotary_dims = s.rotary_dims;
    c.bos_id = c.eos_id = 0;  // GPT-NeoX's tokenizer: <|endoftext|> is id 0 and both
  }
  return c;
}

std::vector<std::string> synthetic_shape_names() {
  std::vector<std::string> names;
  for (const Shape& s : kShapes) names.push_back(s.name);
  return names;
}

bool is_synthetic_path(const std::string& path) { return path.rfind("synthetic:", 0) == 0; }

SyntheticSpec parse_synthetic_path(const std::string& path) {
  if (!is_synthetic_path(path)) fail(path, "not a synthetic model path (synthetic:<shape>[:vocab=N][:seed=N][:dtype=f16|bf16|f32][:ctx=N])");
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = path.find(':', start)) != std::string::npos; start = colon + 1)
    parts.push_back(path.substr(start, colon - start));
  parts.push_back(path.substr(start));
  SyntheticSpec spec;
  spec.shape = parts.size() > 1 ? parts[1] : "";
  if (!find_shape(spec.shape)) fail(path, "unknown synthetic shape \"" + spec.shape + "\" (known: " + known_shapes() + ")");
  for (size_t i = 2; i < parts.size(); ++i) {
    const std::string& opt = parts[i];
    const size_t eq = opt.find('=');
    const std::string key = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (eq == std::string::npos) fail(path, "option \"" + opt + "\" should be key=value");
    if (key == "seed") {
      spec.seed = parse_number(value, path, key);
    } else if (key == "vocab" || key == "ctx") {
      const uint64_t v = parse_number(value, path, key);
      if (v == 0 || v > uint64_t(INT32_MAX)) fail(path, key + " must be between 1 and " + std::to_string(INT32_MAX));
      (key == "vocab" ? spec.vocab_size : spec.max_seq_len) = int(v);
    } else if (key == "dtype") {
      spec.types = parse_type_mix(value, path + ": dtype");
    } else {
      fail(path, "unknown option \"" + key + "\" (known: vocab, seed, dtype, ctx)");
    }
  }
  return spec;
}

namespace {

// make_synthetic's model; without `weights`, its layout alone (synthetic_layout).
// Every tensor of `model` (its config set) planned: type, shape and place in
// one buffer, with the scale its values are drawn at.
struct Layout {
  std::vector<Plan> plans;
  size_t total = 0;  // bytes of the buffer
};

Layout plan_tensors(Model& model, const SyntheticSpec& spec, const Shape& shape) {
  const ModelConfig& c = model.config;
  const int64_t d = c.dim, hid = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  ModelWeights& w = model.weights;
  w.layers.resize(c.n_layers);
  std::vector<Plan> plans;
  size_t total = 0;
  // Matrices: U(-a, a) with a = sqrt(3 / in) has variance 1/in, so each
  // projection maps unit-variance inputs to unit-variance outputs and the
  // activations stay O(1) at any size. Norm gains are 1 with a little noise
  // so that mixing up two norms changes the output.
  auto add = [&](Tensor& t, TensorRole role, int layer, int64_t rows, int64_t cols, float center, float scale) {
    t.dtype = spec.types.type_for(role, layer, c.n_layers, cols);
    t.rows = rows;
    t.cols = cols;
    plans.push_back({&t, total, center, scale});
    total += (size_t(t.bytes()) + kAlign - 1) / kAlign * kAlign;
  };
  int layer = 0;  // of the tensors being added
  auto matrix = [&](Tensor& t, TensorRole role, int64_t rows, int64_t cols) {
    add(t, role, layer, rows, cols, 0.0f, std::sqrt(3.0f / float(cols)));
  };
  auto norm = [&](Tensor& t) { add(t, TensorRole::Vector, layer, 1, d, 1.0f, 0.1f); };
  auto bias = [&](Tensor& t, int64_t n) { add(t, TensorRole::Vector, layer, 1, n, 0.0f, 0.5f); };
  // LayerNorm shifts and output biases: small, so they matter without swamping the signal.
  auto small_bias = [&](Tensor& t, int64_t n) { add(t, TensorRole::Vector, layer, 1, n, 0.0f, 0.1f); };
  const bool layer_norm = c.norm == NormKind::Layer;

  // A tied embedding doubles as the classifier, so it gets the classifier's
  // scale (unit-variance logits); an untied one gets O(1) entries.
  // A tied embedding is the classifier too, and takes the classifier's type.
  matrix(w.token_embedding, shape.shared_classifier ? TensorRole::Classifier : TensorRole::Embedding, c.vocab_size, d);
  if (!shape.shared_classifier) plans.back().scale = 1.0f;
  for (layer = 0; layer < c.n_layers; ++layer) {
    LayerWeights& l = w.layers[size_t(layer)];
    norm(l.attn_norm);
    if (layer_norm) small_bias(l.attn_norm_bias, d);
    matrix(l.wq, TensorRole::AttnQ, q, d);
    matrix(l.wk, TensorRole::AttnK, kv, d);
    matrix(l.wv, TensorRole::AttnV, kv, d);
    if (c.attention_bias) bias(l.bq, q), bias(l.bk, kv), bias(l.bv, kv);
    matrix(l.wo, TensorRole::AttnOut, d, q);
    if (c.output_bias) small_bias(l.bo, d);
    norm(l.ffn_norm);
    if (layer_norm) small_bias(l.ffn_norm_bias, d);
    if (c.ffn == FfnKind::SwiGlu) matrix(l.w1, TensorRole::FfnGate, hid, d);
    matrix(l.w2, TensorRole::FfnDown, d, hid);
    matrix(l.w3, TensorRole::FfnUp, hid, d);
    if (c.output_bias) small_bias(l.b2, d), small_bias(l.b3, hid);
  }
  norm(w.final_norm);
  if (layer_norm) small_bias(w.final_norm_bias, d);
  if (!shape.shared_classifier) matrix(w.classifier, TensorRole::Classifier, c.vocab_size, d);
  return {std::move(plans), total};
}

std::shared_ptr<const Model> build_synthetic(const SyntheticSpec& spec, bool weights, const LoadProgress& progress) {
  const Shape& shape = shape_or_fail(spec.shape);
  auto model = std::make_shared<Model>();
  ModelConfig& c = model->config;
  c = synthetic_shape(spec.shape);
  if (spec.vocab_size > 0) c.vocab_size = spec.vocab_size;
  if (spec.max_seq_len > 0) c.max_seq_len = spec.max_seq_len;
  model->path = "synthetic:" + spec.shape;
  model->format = "synthetic";
  c.validate(model->path);
  const auto [plans, total] = plan_tensors(*model, spec, shape);
  ModelWeights& w = model->weights;

  if (!weights) {  // a distinct byte per tensor, so that a tied classifier still shows as tied
    auto marks = std::make_shared<std::vector<uint8_t>>(plans.size());
    for (size_t i = 0; i < plans.size(); ++i) plans[i].tensor->data = marks->data() + i;
    if (shape.shared_classifier) w.classifier = w.token_embedding;
    model->owned.push_back(marks);
    return model;
  }
  // Uninitialised on purpose: every byte a tensor uses is written by fill(),
  // and first-touching the pages in parallel spreads them across NUMA nodes.
  std::shared_ptr<uint8_t[]> buffer;
  try {
    buffer.reset(new uint8_t[total]);
  } catch (const std::bad_alloc&) {
    fail(model->path, "cannot allocate " + std::to_string(total >> 20) + " MiB for " + spec.types.name + " weights");
  }
  fill(plans, buffer.get(), spec.seed, progress, model->path);
  for (const Plan& p : plans) p.tensor->data = buffer.get() + p.offset;
  if (shape.shared_classifier) w.classifier = w.token_embedding;
  model->storage = buffer;
  return model;
}

}  // namespace

std::shared_ptr<const Model> make_synthetic(const SyntheticSpec& spec, const LoadProgress& progress) {
  return build_synthetic(spec, true, progress);
}
std::shared_ptr<const Model> synthetic_layout(const SyntheticSpec& spec) { return build_synthetic(spec, false, {}); }

}  // namespace h2o
