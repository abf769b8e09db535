#pragma once
// The compute backend interface, implemented by the CPU backend (core/) and
// the CUDA backend (kernels/). A backend owns the KV caches of the sessions it
// serves and runs one forward pass for several sessions at once, so that the
// weights are read once per step for all of them.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache_policy.h"
#include "error.h"
#include "model.h"

namespace h2o {

// Tokens that left one (layer, KV head) in a cut: their stream positions.
struct EvictionEvent {
  int layer = 0;
  int kv_head = 0;
  int32_t position = 0;
};

// Post-softmax attention of one layer, captured on request for heatmaps.
struct AttentionCapture {
  int layer = 0;
  int rows = 0;                         // query rows captured (the chunk's last `rows`)
  std::vector<int32_t> query_positions;  // stream positions of those rows
  // Per KV head: the key slots attended (cache plus the new chunk), as stream positions.
  std::vector<std::vector<int32_t>> key_positions;
  // Per query head: rows x key_positions[kv_head].size() probabilities, row-major.
  std::vector<std::vector<float>> probs;
};

// One session's KV cache, whatever memory it lives in.
class SessionCache {
 public:
  virtual ~SessionCache() = default;
  virtual const PolicyConfig& policy() const = 0;
  // Tokens processed so far (the next token's stream position).
  virtual int64_t tokens_seen() const = 0;
  virtual int layers() const = 0;
  virtual int kv_heads() const = 0;
  // Tokens held by one (layer, KV head), and their stream positions / accumulated scores in slot order.
  virtual int size(int layer, int kv_head) const = 0;
  // The most tokens any (layer, KV head) holds: the "cached tokens" we report.
  // Every head holds the same count under all three policies; the maximum
  // makes a mismatch show rather than hide.
  int max_size() const {
    int most = 0;
    for (int l = 0; l < layers(); ++l)
      for (int h = 0; h < kv_heads(); ++h) most = size(l, h) > most ? size(l, h) : most;
    return most;
  }
  virtual std::vector<int32_t> positions(int layer, int kv_head) const = 0;
  virtual std::vector<float> scores(int layer, int kv_head) const = 0;
  // Evictions made by the last forward pass.
  virtual const std::vector<EvictionEvent>& last_evictions() const = 0;
  // SEMANTICS.md "KV bytes (live)" and the bytes actually reserved.
  virtual int64_t live_bytes() const = 0;
  virtual int64_t allocated_bytes() const = 0;
};

// Thrown by Backend::forward when one item's cache cannot grow (out of
// memory, or past the backend's KV memory limit). It is thrown before any
// item's cache, scores or logits changed, so the engine can stop that one
// session and run the others again.
class SessionFailure : public Error {
 public:
  SessionFailure(size_t item, const std::string& message) : Error(message), item_(item) {}
  size_t item() const { return item_; }

 private:
  size_t item_;
};

// The KV memory of all the caches one backend made: what they hold now, the
// most they ever held together, and the limit (0: none) past which a cache
// may not grow, as a device's memory would stop it.
struct KvMemoryAccount {
  int64_t allocated = 0, peak = 0, limit = 0;
  // Books `bytes` more; throws Error (and books nothing) past the limit.
  void grow(int64_t bytes);
  void release(int64_t bytes) { allocated -= bytes; }
};

struct ForwardItem {
  SessionCache* cache = nullptr;
  std::span<const int> tokens;  // the new tokens (a decode step is one)
  bool all_logits = false;      // logits for every row, else for the last row only
  std::vector<float>* logits = nullptr;  // out: rows x vocab
  int capture_layer = -1;       // >= 0: fill `capture` for this layer
  int capture_rows = 1;
  AttentionCapture* capture = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  virtual std::string describe() const = 0;  // device, precision, threads
  virtual const Model& model() const = 0;
  virtual std::unique_ptr<SessionCache> new_cache(const PolicyConfig& policy) = 0;
  // Runs the given sessions' new tokens through the model, appends them to
  // their caches, accumulates scores and applies each session's policy.
  // Every item must use a cache made by this backend.
  virtual void forward(std::span<ForwardItem> items) = 0;
  // Peak device (or host) memory reserved for KV caches, all sessions together, bytes.
  virtual int64_t peak_kv_bytes() const = 0;
};

struct BackendOptions {
  std::string kind = "cpu";  // "cpu" or "cuda"
  int threads = 0;           // CPU threads; 0: all cores
  std::string precision = "f32";  // CUDA weights: f32, f16, bf16
  int64_t kv_limit_bytes = 0;     // KV memory of all sessions together; 0: no limit
};

// Makes the backend named in `options` for a model; throws Error if it is not
// available in this build or on this machine.
std::unique_ptr<Backend> make_backend(std::shared_ptr<const Model> model, const BackendOptions& options);
std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const Model> model, int threads,
                                          int64_t kv_limit_bytes = 0);

}  // namespace h2o
