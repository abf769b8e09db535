#pragma once
// The compute backend interface, implemented by the CPU backend (core/cpu)
// and the CUDA backend (kernels/). A backend owns the KV caches of the
// sessions it serves and runs one forward pass for several sessions at once,
// so that the weights are read once per step for all of them.
//
// The rules, written so that a device can serve this without a
// synchronisation per call (docs/ARCHITECTURE.md):
//  - forward() is the one call per step that waits for the device. Everything
//    a caller wants from a step (the chosen token, forced-mode scores, full
//    logits, attention captures, layer states) is asked for in its
//    ForwardItem and comes back from that call; nothing else crosses.
//  - A cache's size(), tokens_seen(), live_bytes() and allocated_bytes() are
//    host-side bookkeeping (every KV head of a cache holds the same count,
//    known without reading the device). read_layer() and last_evictions()
//    return what the last forward() brought back.
//  - Policies reach a backend as the plain EvictionRule of their PolicyConfig:
//    a backend never asks which policy it is serving.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/model/model.h"
#include "core/policy/policy.h"
#include "core/runtime/capture.h"
#include "core/runtime/evictions.h"
#include "core/runtime/forced_scoring.h"
#include "core/runtime/sampler.h"

namespace h2o {

// One session's KV cache, whatever memory it lives in.
class SessionCache {
 public:
  virtual ~SessionCache() = default;
  virtual const PolicyConfig& policy() const = 0;
  // Tokens processed so far (the next token's stream position).
  virtual int64_t tokens_seen() const = 0;
  virtual int layers() const = 0;
  virtual int kv_heads() const = 0;
  // Tokens held by one (layer, KV head).
  virtual int size(int layer, int kv_head) const = 0;
  // The most tokens any (layer, KV head) holds: the "cached tokens" we
  // report. Every head holds the same count under every policy; the maximum
  // makes a mismatch show rather than hide.
  int max_size() const;
  // Every KV head's positions and scores of one layer, in one read.
  virtual LayerState read_layer(int layer) const = 0;
  // What the last forward pass evicted.
  virtual const EvictionSummary& last_evictions() const = 0;
  // SEMANTICS.md "KV bytes (live)", and the bytes actually reserved.
  virtual int64_t live_bytes() const = 0;
  virtual int64_t allocated_bytes() const = 0;
  // Tokens held as low-bit codes (KIVI's quantized run) by the (layer, KV
  // head) holding most: 0 at 16 bits or the backend's own type, and while
  // every token still sits in the f16 sinks and residual.
  virtual int quantized_tokens() const { return 0; }
};

// Thrown by Backend::forward when one item's cache cannot grow (out of
// memory, or past the backend's KV memory limit). It is thrown before any
// item's cache, scores or outputs changed, so the engine can stop that one
// session and run the others again.
class SessionFailure : public Error {
 public:
  SessionFailure(size_t item, const std::string& message) : Error(message), item_(item) {}
  size_t item() const { return item_; }

 private:
  size_t item_;
};

// Teacher forcing: the token each fed row should predict, and the cache whose
// rows of this same step are the reference for KL and agreement (the full
// cache; it runs earlier in the same call or in an earlier call of this step).
struct ForcedTargets {
  std::span<const int> next;  // rows with a next token: at most the fed count
  const SessionCache* reference = nullptr;
};

// One session's part of a forward pass, and what it asks to get back.
struct ForwardItem {
  SessionCache* cache = nullptr;
  std::span<const int> tokens;  // the new tokens (a decode step is one)

  // The next token chosen from the last row: the engine's way (a device returns an id).
  const TokenChoice* choose = nullptr;
  int* chosen = nullptr;
  // Teacher-forced scores of the rows (a device returns a few numbers a row).
  const ForcedTargets* forced = nullptr;
  ForcedScores* scores = nullptr;
  // Full logits (tests and tools): the last row, or every row. Costly on a device.
  std::vector<float>* logits = nullptr;
  bool all_logits = false;
  // Attention and cache state, as the plan asks (nothing when null).
  const CapturePlan* capture = nullptr;
  std::vector<AttentionCapture>* captured = nullptr;  // one per plan->attention request
  std::vector<LayerState>* layer_states = nullptr;    // one per plan->layer_states entry
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;      // "cpu", "cuda", "cuda-sim"
  virtual std::string describe() const = 0;  // device, precision, threads
  virtual const Model& model() const = 0;
  virtual std::unique_ptr<SessionCache> new_cache(const PolicyConfig& policy) = 0;
  // A copy of `cache` (made by this backend) that runs on as a session of its
  // own: positions, keys and values at their precision, scores, the rule's
  // bookkeeping and the forced rows it keeps. Fed the same input, its steps
  // are bit-identical to the original's, and neither changes the other (the
  // needle's prefix sharing and the app's asks, core/needle). Its bytes are
  // booked in this backend's KV account: CacheCannotGrow past the limit.
  virtual std::unique_ptr<SessionCache> fork(const SessionCache& cache) = 0;
  // Runs the items' new tokens through the model, appends them to their
  // caches, updates scores as each rule says (accumulated, or the step's last
  // row), cuts each cache by its rule, and fills what each item asked for.
  // Every item must use a distinct cache made by this backend.
  virtual void forward(std::span<ForwardItem> items) = 0;
  // Peak device (or host) memory reserved for KV caches, all sessions together, bytes.
  virtual int64_t peak_kv_bytes() const = 0;

  // For benchmarks. The bytes of weights one forward pass reads, as this
  // backend holds them (a CPU that widens f16 to f32 reads f32).
  virtual int64_t weight_bytes() const { return model().weight_bytes(); }
  // Device memory the weights took when the backend was made: every buffer it
  // uploaded (matrices in its storage type, norms, biases, the RoPE table),
  // the embedding counted once; 0 for a backend that computes in host memory.
  virtual int64_t device_weight_bytes() const { return 0; }
  // The memory bandwidth decode is bound by, measured now on a working set of
  // `bytes` (GB/s; NaN where the backend cannot measure it).
  virtual double measure_bandwidth(int64_t bytes);
};

// Feeds one token to one cache and returns the token `choice` picks after it
// (tools and benchmarks that drive a backend without an engine).
int feed_one(Backend& backend, SessionCache& cache, int token, const TokenChoice& choice);

struct BackendOptions {
  std::string kind = "cpu";       // "cpu", "cuda" or "cuda-sim" (core/backends/make_backend.h)
  int threads = 0;                // CPU threads; 0: all cores
  // CUDA weights: f32, f16, bf16, native (quantised matrices kept in their
  // blocks); "": native for a file with quantised matrices, else f32.
  std::string precision;
  int64_t kv_limit_bytes = 0;     // KV memory of all sessions together; 0: no limit
};

// cuda and cuda-sim (the device's code, emulated): the defaults below follow it.
bool is_device_backend(const std::string& backend_kind);

// The slack a policy gets where none is asked for (docs/CUDA.md:
// the slack sweep). On the CPU 0: the cache is cut back every step past its
// budget, exactly as the references are made. On a GPU kDeviceSlack: a cut
// compacts every (layer, KV head) on the device, and at slack 0 StreamingLLM
// moves its whole window every step (0.33 ms of a 6 ms Llama-2-7B step on an
// H200); slack 64 pays that once per 64 steps for 64 more cached tokens.
inline constexpr int kDeviceSlack = 64;
int default_slack(const std::string& backend_kind);

// Whether a run of several policies decodes them in one forward pass where
// none is asked for. On a GPU yes: a step reads the weights once for all of
// them (Llama-2-7B, four panes on an H200: 7.2 ms batched against 21 ms one
// by one), so every policy's decode time is the shared step's. On the CPU no:
// each policy is timed alone, as its throughput curve shows.
bool batched_by_default(const std::string& backend_kind);

}  // namespace h2o
