// llama2.c checkpoints (karpathy/llama2.c `export.py` version 0 / `run.c`):
// a header of 7 int32 and then every weight as float32 in a fixed order. The
// file has no per-tensor metadata, so the only integrity check available is
// that its length is exactly what the header implies; anything else is an
// error rather than a guess.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/model/model.h"

namespace h2o {
namespace {

constexpr int kHeaderInts = 7;
constexpr uint64_t kHeaderBytes = kHeaderInts * sizeof(int32_t);

// Element counts and byte offsets come from untrusted header fields: every
// product and sum goes through these so a hostile header cannot wrap around.
uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& path) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(path, "header describes a model too large to address");
  return r;
}

uint64_t checked_add(uint64_t a, uint64_t b, const std::string& path) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(path, "header describes a model too large to address");
  return r;
}

struct Header {
  ModelConfig config;
  bool shared_classifier = true;
};

Header read_header(const MappedFile& file) {
  const std::string& path = file.path();
  if (file.size() < kHeaderBytes)
    fail(path, "truncated: expected at least " + std::to_string(kHeaderBytes) + " bytes of llama2.c header, file has " +
                   std::to_string(file.size()));
  int32_t h[kHeaderInts];
  std::memcpy(h, file.data(), kHeaderBytes);
  const char* names[kHeaderInts] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  // Any file that is neither GGUF nor a Hugging Face folder is read as llama2.c: a text or another
  // format gives a header of nonsense, said as "not a model" rather than as a shape it cannot have.
  constexpr int32_t kMost[kHeaderInts] = {1 << 16, 1 << 18, 1 << 10, 1 << 10, 1 << 10, 1 << 22, 1 << 24};
  for (int i = 0; i < kHeaderInts; ++i) {
    // vocab_size carries the classifier flag in its sign, so only zero is invalid there.
    const int64_t v = (i == 5) ? std::abs(int64_t(h[i])) : int64_t(h[i]);
    if (v <= 0 || v > kMost[i])
      fail(path, std::string("not a model: not a GGUF file, a Hugging Face folder or config.json, nor a llama2.c "
                             "checkpoint (read as one, its header field ") +
                     names[i] + " is " + std::to_string(h[i]) + ")");
  }
  Header out;
  ModelConfig& c = out.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5] < 0 ? -h[5] : h[5];
  c.max_seq_len = h[6];
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.bos_id = 1;
  c.eos_id = 2;
  out.shared_classifier = h[5] > 0;
  c.validate(path);
  return out;
}

// Hands out consecutive float32 tensors from the mapping, in file order.
class Cursor {
 public:
  Cursor(const MappedFile& file, uint64_t offset) : file_(file), offset_(offset) {}

  // One tensor of rows x cols floats.
  Tensor take(int64_t rows, int64_t cols) {
    Tensor t;
    t.dtype = DType::F32;
    t.rows = rows;
    t.cols = cols;
    t.data = file_.data() + offset_;
    offset_ += uint64_t(rows) * uint64_t(cols) * sizeof(float);
    return t;
  }
  void skip(uint64_t floats) { offset_ += floats * sizeof(float); }
  uint64_t offset() const { return offset_; }

 private:
  const MappedFile& file_;
  uint64_t offset_;
};

// Total bytes the header implies, computed with overflow checks before any
// pointer into the mapping is formed.
uint64_t expected_file_bytes(const Header& h, const std::string& path) {
  const ModelConfig& c = h.config;
  const uint64_t d = uint64_t(c.dim), hid = uint64_t(c.hidden_dim), L = uint64_t(c.n_layers);
  const uint64_t q = checked_mul(uint64_t(c.n_heads), uint64_t(c.head_dim()), path);
  const uint64_t kv = uint64_t(c.kv_dim());
  const uint64_t vocab = uint64_t(c.vocab_size);
  // Per-layer floats: two norms, wq, wk, wv, wo, w1, w2, w3.
  uint64_t per_layer = 2 * d;
  per_layer = checked_add(per_layer, checked_mul(2, checked_mul(q, d, path), path), path);
  per_layer = checked_add(per_layer, checked_mul(2, checked_mul(kv, d, path), path), path);
  per_layer = checked_add(per_layer, checked_mul(3, checked_mul(hid, d, path), path), path);
  uint64_t floats = checked_mul(vocab, d, path);
  floats = checked_add(floats, checked_mul(L, per_layer, path), path);
  floats = checked_add(floats, d, path);
  // freq_cis_real and freq_cis_imag: seq_len x head_dim/2 each.
  floats = checked_add(floats, checked_mul(uint64_t(c.max_seq_len), uint64_t(c.head_dim()), path), path);
  if (!h.shared_classifier) floats = checked_add(floats, checked_mul(vocab, d, path), path);
  return checked_add(kHeaderBytes, checked_mul(floats, sizeof(float), path), path);
}

}  // namespace

std::shared_ptr<const Model> load_llama2c(const std::string& path) {
  auto file = MappedFile::open(path);
  const Header header = read_header(*file);
  const uint64_t expected = expected_file_bytes(header, path);
  if (file->size() < expected)
    fail(path, "truncated: expected " + std::to_string(expected) + " bytes, file has " + std::to_string(file->size()));
  if (file->size() > expected)
    fail(path, "trailing bytes: expected " + std::to_string(expected) + " bytes for this header, file has " +
                   std::to_string(file->size()) + " (not a llama2.c checkpoint, or a different export version?)");
  // The mapping is page-aligned and the header is 28 bytes, so this holds for
  // every real file; checked anyway because the views are read as float*.
  if (reinterpret_cast<uintptr_t>(file->data() + kHeaderBytes) % alignof(float) != 0)
    fail(path, "weights are not aligned for float32 access");

  auto model = new_model(header.config, path, "llama2c");
  const ModelConfig& c = model->config;
  const int64_t d = c.dim, hid = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  const int L = c.n_layers;

  Cursor cur(*file, kHeaderBytes);
  ModelWeights& w = model->weights;
  w.layers.resize(L);
  w.token_embedding = cur.take(c.vocab_size, d);
  // llama2.c stores each kind of tensor for all layers together.
  for (int l = 0; l < L; ++l) w.layers[l].attn_norm = cur.take(1, d);
  for (int l = 0; l < L; ++l) w.layers[l].wq = cur.take(q, d);
  for (int l = 0; l < L; ++l) w.layers[l].wk = cur.take(kv, d);
  for (int l = 0; l < L; ++l) w.layers[l].wv = cur.take(kv, d);
  for (int l = 0; l < L; ++l) w.layers[l].wo = cur.take(d, q);
  for (int l = 0; l < L; ++l) w.layers[l].ffn_norm = cur.take(1, d);
  for (int l = 0; l < L; ++l) w.layers[l].w1 = cur.take(hid, d);
  for (int l = 0; l < L; ++l) w.layers[l].w2 = cur.take(d, hid);
  for (int l = 0; l < L; ++l) w.layers[l].w3 = cur.take(hid, d);
  w.final_norm = cur.take(1, d);
  // The RoPE tables are recomputed from rope_theta; skip them.
  cur.skip(uint64_t(c.max_seq_len) * uint64_t(c.head_dim()));
  w.classifier = header.shared_classifier ? w.token_embedding : cur.take(c.vocab_size, d);
  if (cur.offset() != expected) fail(path, "internal error: tensor layout does not add up to the file length");

  model->storage = file;
  return model;
}

}  // namespace h2o
