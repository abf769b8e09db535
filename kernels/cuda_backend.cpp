// The CUDA backend's host side: it plans each step from host bookkeeping
// (kernels/step_plan.h), writes the step's small inputs into one block that
// is copied up once, enqueues the whole forward pass on one stream — or
// replays it from a CUDA graph for decode steps — and copies the small
// outputs back once (chosen tokens, evicted positions, forced-mode scores,
// trimmed captures, layer states): one synchronisation per step.
//
// The pass: embed; per layer RMSNorm (LayerNorm with a bias for GPT-NeoX),
// one fused Q|K|V projection over every session's rows (+ biases), RoPE +
// append to each cache, split-K attention with the score accumulation,
// output projection + residual (one GEMM with beta = 1, + bias), the second
// norm, fused gate|up projection and SwiGLU (or up + bias and GELU), down
// projection + residual (+ bias) — the second norm before the output
// projection under GPT-NeoX's parallel residual; then the final norm of the
// rows to classify, the classifier, the next-token choice, forced-mode
// scores, captures, and the cut of every cache that is due, all on the device.
#include "kernels/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "core/runtime/capture.h"
#include "core/runtime/forward_plan.h"
#include "kernels/blas.h"
#include "kernels/capture_layout.h"
#include "kernels/cuda_cache.h"
#include "kernels/device_buffer.h"
#include "kernels/device_weights.h"
#include "kernels/graph_cache.h"
#include "kernels/launch.h"
#include "kernels/op_timer.h"
#include "kernels/step_plan.h"
#include "kernels/weight_convert.h"

namespace H2O_CUDA_NS {
namespace {

kern::ModelDims dims_of(const ModelConfig& c) {
  kern::ModelDims d;
  d.dim = c.dim;
  d.hidden = c.hidden_dim;
  d.layers = c.n_layers;
  d.heads = c.n_heads;
  d.kv_heads = c.n_kv_heads;
  d.head_dim = c.head_dim();
  d.group = c.group_size();
  d.vocab = c.vocab_size;
  d.q_dim = c.n_heads * c.head_dim();
  d.kv_dim = c.kv_dim();
  d.qkv_stride = d.q_dim + 2 * d.kv_dim;
  d.norm_eps = c.norm_eps;
  return d;  // rope_freq: uploaded by the backend
}

// What the pass runs (enqueue_layer): the norms, feed-forward blocks and
// biases it knows; anything else is refused here rather than run as Llama.
void check_supported(const ModelConfig& c) {
  if (c.norm != NormKind::Rms && c.norm != NormKind::Layer)
    throw Error("cuda backend: the model's norm kind is not supported (RMSNorm or LayerNorm)");
  if (c.ffn != FfnKind::SwiGlu && c.ffn != FfnKind::Gelu)
    throw Error("cuda backend: the model's feed-forward kind is not supported (SwiGLU or the GELU MLP)");
  if (c.ffn == FfnKind::SwiGlu && c.output_bias)
    throw Error("cuda backend: output and MLP biases with SwiGLU are not supported (only with the GELU MLP)");
}

// The KV cache's element type: f32 with f32 weights (the exact path), else
// f16 — for bf16 weights too: keys and values need f16's three more mantissa
// bits far more than bf16's range (llama.cpp's default KV type is f16 as well).
DType kv_storage_for(DType weights) { return weights == DType::F32 ? DType::F32 : DType::F16; }

// memcpy for vectors that may be empty (memcpy from a null pointer is undefined, even for 0 bytes).
void put(char* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}


// The device pointers of one step's inputs and scratch, as the kernels take them.
struct StepArgs {
  int items = 0, rows = 0, tiles = 0, tile_queries = 0, classified = 0, forced = 0, units = 0;
  int low_bit_tiles = 0;  // the last tiles: quantized caches' (attention_low_bit, then kv_flush)
  const int* tokens = nullptr;
  const int* row_item = nullptr;
  const kern::ItemDesc* item_desc = nullptr;
  const kern::RowTile* tile_desc = nullptr;
  const int* classify = nullptr;
  const kern::ChooseDesc* choose = nullptr;
  const kern::ForcedRow* forced_rows = nullptr;
  const kern::CaptureSlot* capture_slots = nullptr;
  const kern::CaptureUnit* capture_units = nullptr;
  kern::AttentionScratch attention;
  int32_t* evicted = nullptr;
  bool any_cut = false, any_forced = false;
  const float* rope_slots = nullptr;  // cos/sin per (slot, pair) when a rolling cache is cut
  int64_t kv_bytes_per_layer = 0;  // keys and values attention reads in one layer (for --op-times)
};

// Where one (item, layer)'s positions and scores land in the readback.
struct LayerReadout {
  size_t item = 0;
  int layer = 0;
  size_t positions = 0, scores = 0;  // readback offsets
};

// One forward pass's host state, from its plan to what comes back.
struct Step {
  std::span<ForwardItem> items;
  std::vector<CudaCache*> caches;
  std::vector<kern::ItemShape> shapes;
  kern::StepPlan plan;
  int N = 0, T = 0, R = 0;  // items, rows, classified rows
  bool captures = false, forced = false, any_sample = false;
  bool graphable = false;  // a decode step a graph may serve
  // The readback (what comes down) and the inputs block (what goes up).
  kern::BlockLayout out, in, capture_lists;  // the lists go last in `in`: fixed offsets before them serve a graph
  size_t chosen_at = 0, evicted_at = 0, plain_end = 0;  // plain_end: what a plain decode step brings back
  std::vector<int> evicted_base;  // per item: its first evicted position in the readback
  std::vector<size_t> counts_at;  // per quantized item: its heads' counts (kern::LowBitCount)
  std::vector<size_t> forced_at;  // per item: its forced scores
  std::optional<kern::CaptureLayout> capture;
  std::vector<LayerReadout> layer_readouts;
  std::vector<bool> compared;  // per item: its forced rows compare with a reference of this step
  StepArgs args;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const Model> model, const BackendOptions& options, const CudaTuning& tuning);
  ~CudaBackend() override;

  // The emulated build's (kernels/simt) is the same class on a device that says it is emulated.
  std::string name() const override { return info_.emulated ? "cuda-sim" : "cuda"; }
  std::string describe() const override;
  const Model& model() const override { return *model_; }
  std::unique_ptr<SessionCache> new_cache(const PolicyConfig& policy) override;
  void forward(std::span<ForwardItem> items) override;
  int64_t peak_kv_bytes() const override { return account_->peak; }
  int64_t weight_bytes() const override { return weights_->bytes().pass; }
  // Every weight buffer (padding included) and the RoPE table, as uploaded.
  int64_t device_weight_bytes() const override { return weights_->bytes().device + int64_t(rope_freq_.bytes()); }
  double measure_bandwidth(int64_t bytes) override { return cuda_copy_bandwidth_gbs(bytes, 10); }

  double last_forward_ms() const { return last_ms_; }
  CudaBackendStats stats() const {
    return {forwards_, graph_replays_, graph_captures_, info_.name, weights_->bytes().device};
  }
  // Per-operation device times (eager passes only while on): kernels/op_timer.h.
  void set_op_timing(bool on) { ops_ = on ? std::make_unique<kern::OpTimer>(stream_->stream) : nullptr; }
  std::vector<kern::OpTime> op_times() const { return ops_ ? ops_->totals() : std::vector<kern::OpTime>{}; }

 private:
  // Grows a scratch buffer; a move invalidates the captured graphs, which hold its address.
  void grow(gpu::DeviceBuffer& buffer, size_t bytes);
  // Makes the cut's cos/sin table (kernels/rope_slots.cu) cover slots < `slots`; outside any capture.
  void cover_rope_slots(int slots);
  void embed(const int* tokens, float* x, int rows);
  void enqueue_pass(const StepArgs& a);
  // The pass's named steps (enqueue_pass), each a few launches.
  void mark(const char* op, int64_t bytes = 0);
  void normalize(const float* x, const float* weight, const float* bias, void* out, const int* row_map, int rows);
  void project_into_residual(const void* in, const kern::DeviceMatrix& w, const float* bias, int rows, const char* op);
  void enqueue_layer(const StepArgs& a, int layer);
  void enqueue_attention(const StepArgs& a, int layer);
  void enqueue_ffn(const kern::DeviceLayerWeights& w, int rows);
  void run_graphed(const StepArgs& a, const kern::GraphKey& key);
  void enqueue_forced(const StepArgs& a, std::span<ForwardItem> items, const std::vector<CudaCache*>& caches,
                      const kern::StepPlan& plan);
  // forward()'s named steps.
  Step plan_forward(std::span<ForwardItem> items);
  void grow_scratch(const Step& st);
  void lay_out_readback(Step& st);
  void write_inputs(Step& st);
  void write_item_descs(const Step& st, kern::ItemDesc* desc) const;
  void write_choices(const Step& st, kern::ChooseDesc* choose) const;
  void write_forced_rows(Step& st, kern::ForcedRow* forced_rows) const;
  void run(Step& st);
  void deliver(const Step& st);
  // Bytes of a quantized cache's counts, every (layer, KV head).
  size_t counts_bytes() const { return size_t(dims_.layers) * dims_.kv_heads * kern::kCounts * sizeof(int32_t); }
  std::map<int, LayerState> layer_states_of(const Step& st, size_t item, const char* back) const;

  std::shared_ptr<const Model> model_;
  ModelConfig cfg_;
  kern::ModelDims dims_;
  kern::Precision precision_;  // weight_convert.h
  DType storage_;              // the projections' inputs (and every matrix unless native)
  DType kv_;                   // the KV cache (kv_storage_for)
  CudaTuning tuning_;
  gpu::DeviceInfo info_;
  std::shared_ptr<SharedStream> stream_;
  std::unique_ptr<kern::Blas> blas_;
  std::shared_ptr<KvMemoryAccount> account_ = std::make_shared<KvMemoryAccount>();

  std::unique_ptr<kern::DeviceWeights> weights_;
  gpu::DeviceBuffer rope_freq_;  // per-pair RoPE frequencies (double), with the model's scaling

  // Activations and scratch of the current step (grown, never shrunk).
  gpu::DeviceBuffer x_, xb_, qkv_, att_, gate_up_, hidden_, attn_logits_, partials_, stats_, classify_in_, logits_,
      log_z_, sample_scratch_, capture_probs_, capture_work_, order_, inputs_, readback_, rope_slots_;
  int rope_slot_rows_ = 0;  // slots rope_slots_ holds
  gpu::PinnedBuffer inputs_host_, readback_host_;
  uint64_t buffers_generation_ = 0;

  kern::GraphCache<gpu::Graph> graphs_;
  gpu::Event start_ = nullptr, end_ = nullptr;
  double last_ms_ = NAN;
  std::unique_ptr<kern::OpTimer> ops_;  // set while --op-times measures
  int64_t forwards_ = 0, graph_replays_ = 0, graph_captures_ = 0;
};

CudaBackend::CudaBackend(std::shared_ptr<const Model> model, const BackendOptions& options, const CudaTuning& tuning)
    : model_(std::move(model)),
      cfg_(model_->config),
      dims_(dims_of(cfg_)),
      precision_(kern::resolve_precision(options.precision, *model_)),
      storage_(precision_.storage),
      kv_(kv_storage_for(storage_)),
      tuning_(tuning),
      graphs_(size_t(std::max(tuning.graph_capacity, 1)), [](gpu::Graph g) { gpu::destroy_graph(g); }) {
  check_supported(cfg_);
  if (tuning_.threads < 32 || tuning_.threads > 1024 || tuning_.threads % 32 != 0)
    throw Error("cuda backend: block size " + std::to_string(tuning_.threads) + " is not a multiple of 32 in [32, 1024]");
  if (tuning_.matvec_rows < 0 || tuning_.matvec_rows > kern::kMatvecMaxRows)
    throw Error("cuda backend: matvec rows " + std::to_string(tuning_.matvec_rows) + " is not in [0, " +
                std::to_string(kern::kMatvecMaxRows) + "]");
  if (dims_.head_dim > kern::kMaxHeadDim || dims_.head_dim % 2 != 0)
    throw Error("cuda backend: head dimension " + std::to_string(dims_.head_dim) + " is not supported (even, at most " +
                std::to_string(kern::kMaxHeadDim) + ")");
  if (dims_.group > kern::kMaxTileQueries)
    throw Error("cuda backend: " + std::to_string(dims_.group) + " query heads per KV head is not supported (at most " +
                std::to_string(kern::kMaxTileQueries) + ")");
  account_->limit = options.kv_limit_bytes;
  try {
    info_ = gpu::open_device();
  } catch (const Error& e) {
    fail("--backend", std::string("cuda: ") + e.what());  // one line naming the flag, as every bad input
  }
  stream_ = std::make_shared<SharedStream>();
  if (tuning_.timing) {
    start_ = gpu::create_event();
    end_ = gpu::create_event();
  }
  weights_ = std::make_unique<kern::DeviceWeights>(*model_, precision_, stream_->stream);
  blas_ = std::make_unique<kern::Blas>(stream_->stream, tuning_.matvec_rows, weights_->dequant_scratch());
  // RoPE frequencies with the model's scaling, as the CPU backend turns pairs.
  const std::vector<double> freqs = cfg_.rope_frequencies();
  rope_freq_ = gpu::DeviceBuffer(freqs.size() * sizeof(double));
  gpu::copy_to_device(rope_freq_.get(), freqs.data(), freqs.size() * sizeof(double), stream_->stream);
  dims_.rope_freq = rope_freq_.as<double>();
  gpu::synchronize(stream_->stream);
}

CudaBackend::~CudaBackend() {
  graphs_.clear();
  gpu::destroy_event(start_);
  gpu::destroy_event(end_);
}

std::string CudaBackend::describe() const {
  std::string out = name() + " " + info_.name + ", " + weights_->label() + " weights, " +
                    (precision_.native ? std::string(dtype_name(storage_)) + " activations, " : std::string()) +
                    dtype_name(kv_) + " KV, " + (tuning_.graphs ? "graphs" : "no graphs");
  if (account_->limit > 0) out += ", KV limit " + std::to_string(account_->limit >> 20) + " MiB";
  return out;
}

std::unique_ptr<SessionCache> CudaBackend::new_cache(const PolicyConfig& policy) {
  policy.validate();
  // Below 16 bits, or 16 where the device cache is f32: the quantized layout (CudaCache::low_bit()),
  // whose f16 runs keep no pre-RoPE keys to turn again.
  if (!policy.kv.native()) policy.kv.validate_for(dims_.head_dim);
  if (!policy.kv.native() && kv_ != DType::F16 && policy.rolling)
    fail("--kv-bits", policy.kv.label() + " KV with --position-rolling on the " + name() +
                          " backend needs its f16 cache (--precision f16)");
  return std::make_unique<CudaCache>(policy, dims_, kv_, stream_, account_);
}

void CudaBackend::grow(gpu::DeviceBuffer& buffer, size_t bytes) {
  if (bytes <= buffer.bytes()) return;
  size_t rounded = 256;
  while (rounded < bytes) rounded *= 2;  // few reallocations, so graphs are rarely invalidated
  buffer.reserve(rounded);
  ++buffers_generation_;
  graphs_.clear();
}

void CudaBackend::cover_rope_slots(int slots) {
  if (slots <= rope_slot_rows_) return;
  const int rows = kern::next_power_of_two(slots);  // few refills as caches grow
  const int half = dims_.head_dim / 2;
  grow(rope_slots_, size_t(rows) * half * 2 * sizeof(float));  // a new address drops the graphs
  kern::rope_slots(dims_.rope_freq, rope_slots_.as<float>(), rows, half, tuning_.threads, stream_->stream);
  rope_slot_rows_ = rows;
}

// x[r] = the embedding row of tokens[r], in f32: a block format's rows
// dequantised as the CPU does, a float type's widened.
void CudaBackend::embed(const int* tokens, float* x, int rows) {
  const kern::MatrixPart& table = weights_->embedding().part[0];
  if (kern::is_block_format(table.type) && table.type != storage_)
    kern::dequantize_rows(table.type, table.data, dims_.dim, tokens, 0, rows, x, dims_.dim, tuning_.threads,
                          stream_->stream);
  else
    kern::embed(table.type, tokens, table.data, x, rows, dims_.dim, tuning_.threads, stream_->stream);
}

// After each operation, while --op-times measures: its name and the fewest bytes it must move.
void CudaBackend::mark(const char* op, int64_t bytes) {
  if (ops_) ops_->mark(op, bytes);
}

// The norm a block begins with, of rows of x (row_map: which, or null for
// the first `rows`) into the storage type: RMSNorm (Llama, Qwen2) or
// LayerNorm with its bias (GPT-NeoX).
void CudaBackend::normalize(const float* x, const float* weight, const float* bias, void* out, const int* row_map,
                            int rows) {
  const gpu::Stream s = stream_->stream;
  if (cfg_.norm == NormKind::Layer) {
    kern::layernorm(storage_, x, weight, bias, out, row_map, rows, dims_.dim, dims_.norm_eps, s);
    mark("layernorm");
  } else {
    kern::rmsnorm(storage_, x, weight, out, row_map, rows, dims_.dim, dims_.norm_eps, s);
    mark("rmsnorm");
  }
}

// x += w · in (+ bias): a projection whose output joins the residual stream
// (the GEMM's beta = 1), then its bias where the model has one (GPT-NeoX's
// attention output and down projection), added to the sum in f32.
void CudaBackend::project_into_residual(const void* in, const kern::DeviceMatrix& w, const float* bias, int rows,
                                        const char* op) {
  blas_->gemm(x_.as<float>(), in, storage_, w, rows, true);
  mark(op, w.bytes());
  if (!bias) return;
  kern::bias_add(x_.as<float>(), bias, rows, dims_.dim, tuning_.threads, stream_->stream);
  mark("bias_add");
}

// One layer. Sequential (Llama): x += attn(norm1(x)), then x += ffn(norm2(x)).
// Parallel residual (GPT-NeoX): x += attn(norm1(x)) + ffn(norm2(x)), both
// norms of the same x, so the second norm runs before the attention output
// joins x. It can reuse xb_: the Q|K|V projection has read norm1's rows.
void CudaBackend::enqueue_layer(const StepArgs& a, int layer) {
  const kern::DeviceLayerWeights& w = weights_->layers()[size_t(layer)];
  const float* x = x_.as<float>();
  normalize(x, w.attn_norm, w.attn_norm_bias, xb_.get(), nullptr, a.rows);
  enqueue_attention(a, layer);
  if (cfg_.parallel_residual) normalize(x, w.ffn_norm, w.ffn_norm_bias, xb_.get(), nullptr, a.rows);
  project_into_residual(att_.get(), w.wo, w.bo, a.rows, "gemm o");
  if (!cfg_.parallel_residual) normalize(x, w.ffn_norm, w.ffn_norm_bias, xb_.get(), nullptr, a.rows);
  enqueue_ffn(w, a.rows);
}

// Attention of the normed rows in xb_: the Q|K|V projection (+ biases), RoPE
// and the append to each cache, split-K attention and its scores, the output
// heads into att_.
void CudaBackend::enqueue_attention(const StepArgs& a, int layer) {
  const gpu::Stream s = stream_->stream;
  const kern::ModelDims& d = dims_;
  const kern::DeviceLayerWeights& w = weights_->layers()[size_t(layer)];
  const int T = a.rows;
  blas_->gemm(qkv_.as<float>(), xb_.get(), storage_, w.wqkv, T, false);
  mark("gemm q|k|v", w.wqkv.bytes());
  if (w.bqkv) {
    kern::bias_add(qkv_.as<float>(), w.bqkv, T, d.qkv_stride, tuning_.threads, s);
    mark("bias_add");
  }
  kern::rope_append(kv_, qkv_.as<float>(), a.item_desc, a.row_item, T, layer, d, s);
  mark("rope_append");
  const int plain_tiles = a.tiles - a.low_bit_tiles;
  kern::attention_partial(kv_, qkv_.as<float>(), a.item_desc, a.tile_desc, plain_tiles, a.tile_queries, layer, d,
                          a.attention, s);
  kern::attention_low_bit(qkv_.as<float>(), a.item_desc, a.tile_desc + plain_tiles, a.low_bit_tiles, a.tile_queries,
                          layer, d, a.attention, s);
  mark("attention_partial", a.kv_bytes_per_layer);
  kern::attention_combine(storage_, a.item_desc, a.row_item, T, d, a.attention, att_.get(), s);
  mark("attention_combine");
  kern::attention_scores(a.item_desc, a.items, a.attention.key_stride, layer, d, a.attention, a.capture_slots,
                         tuning_.threads, s);
  mark("attention_scores");
}

// The feed-forward block of the normed rows in xb_, into x: SwiGLU (gate|up
// fused, silu(gate) * up) or the GELU MLP (up + b3, GELU, down + b2).
void CudaBackend::enqueue_ffn(const kern::DeviceLayerWeights& w, int rows) {
  const gpu::Stream s = stream_->stream;
  const bool gelu = cfg_.ffn == FfnKind::Gelu;
  blas_->gemm(gate_up_.as<float>(), xb_.get(), storage_, w.w13, rows, false);
  mark(gelu ? "gemm up" : "gemm gate|up", w.w13.bytes());
  if (gelu) {
    kern::gelu(storage_, gate_up_.as<float>(), w.b3, hidden_.get(), rows, dims_.hidden, tuning_.threads, s);
    mark("gelu");
  } else {
    kern::swiglu(storage_, gate_up_.as<float>(), hidden_.get(), rows, dims_.hidden, tuning_.threads, s);
    mark("swiglu");
  }
  project_into_residual(hidden_.get(), w.w2, w.b2, rows, "gemm down");
}

// Everything a step runs on the device after its inputs are up: the layers,
// the classifier and the choice, and the cut. The same calls are captured
// into a graph for decode steps.
void CudaBackend::enqueue_pass(const StepArgs& a) {
  const gpu::Stream s = stream_->stream;
  const int T = a.rows, threads = tuning_.threads;
  const kern::ModelDims& d = dims_;
  float* x = x_.as<float>();
  embed(a.tokens, x, T);
  mark("embed");
  for (int l = 0; l < d.layers; ++l) enqueue_layer(a, l);
  if (a.classified > 0) {
    normalize(x, weights_->final_norm(), weights_->final_norm_bias(), classify_in_.get(), a.classify, a.classified);
    blas_->gemm(logits_.as<float>(), classify_in_.get(), storage_, weights_->classifier(), a.classified, false);
    mark("gemm classifier", weights_->classifier().bytes());
    kern::sample(logits_.as<float>(), a.choose, a.items, d.vocab, sample_scratch_.as<double>(), threads, s);
    mark("sample");
  }
  kern::capture(a.item_desc, a.capture_units, a.units, d, threads, s);
  mark("capture");
  if (a.any_cut) {
    kern::evict(kv_, a.item_desc, a.items, d, a.evicted, order_.as<int>(), a.attention.key_stride, a.rope_slots,
                threads, s);
    mark("evict");
  }
  if (a.low_bit_tiles > 0) {
    kern::kv_flush(a.item_desc, a.items, d, threads, s);
    mark("kv_flush");
  }
}

// One forward pass, as named steps: plan it from host bookkeeping, size the
// scratch, lay out what comes back, write the inputs block, run (a graph for
// decode steps), and hand each item what it asked for.
void CudaBackend::forward(std::span<ForwardItem> items) {
  if (items.empty()) return;
  Step step = plan_forward(items);
  grow_scratch(step);
  lay_out_readback(step);
  write_inputs(step);
  run(step);
  deliver(step);
}

// Checks that need no device and room in every cache (before anything ran),
// then the plan: rows, tiles, splits, cuts, classified rows.
Step CudaBackend::plan_forward(std::span<ForwardItem> items) {
  const kern::ModelDims& d = dims_;
  Step st;
  st.items = items;
  st.caches = checked_caches<CudaCache>(items, {"cuda backend", cfg_.vocab_size, d.layers, d.heads});
  reserve_rows(items, st.caches);
  st.shapes.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    kern::ItemShape& s = st.shapes[i];
    s.n_before = st.caches[i]->held();
    s.rows = int(items[i].tokens.size());
    s.tokens_seen = st.caches[i]->tokens_seen();
    s.rule = st.caches[i]->rule();
    s.low_bit = st.caches[i]->low_bit();
    static_cast<LogitNeeds&>(s) = logit_needs(items[i]);
  }
  st.plan = kern::plan_step(st.shapes, d.group, {d.kv_heads, info_.multiprocessors});
  st.N = int(items.size());
  st.T = st.plan.rows;
  st.R = int(st.plan.classify.size());
  for (const ForwardItem& item : items) {
    st.captures = st.captures || (item.capture && item.captured && !item.capture->attention.empty());
    st.forced = st.forced || item.forced;
    st.any_sample = st.any_sample || (item.choose && item.chosen && !item.choose->sampling.greedy());
  }
  // Decode steps (one row an item, no forced scores, no logits read back) replay graphs, attention
  // captures included (their unit count is part of the key); layer states are copied after it.
  st.graphable = st.T == st.N && !st.forced &&
                 std::none_of(items.begin(), items.end(), [](const ForwardItem& i) { return i.logits; });
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].forced) st.caches[i]->reserve_reference(st.shapes[i].forced_rows, d.vocab);
  return st;
}

// Activations and scratch for the step's rows, keys and classified rows.
void CudaBackend::grow_scratch(const Step& st) {
  const kern::ModelDims& d = dims_;
  const size_t elem = size_t(dtype_size(storage_)), T = size_t(st.T), R = size_t(std::max(st.R, 1));
  grow(x_, T * d.dim * 4);
  grow(xb_, T * d.dim * elem);
  grow(qkv_, T * d.qkv_stride * 4);
  grow(att_, T * d.q_dim * elem);
  grow(gate_up_, T * 2 * d.hidden * 4);
  grow(hidden_, T * d.hidden * elem);
  grow(attn_logits_, T * d.heads * st.plan.key_stride * 4);
  grow(partials_, T * d.heads * st.plan.split_bucket * (d.head_dim + 2) * 4);
  grow(stats_, T * d.heads * 2 * 4);
  grow(classify_in_, R * d.dim * elem);
  grow(logits_, R * d.vocab * 4);
  grow(log_z_, R * 8);
  if (st.any_sample) grow(sample_scratch_, size_t(st.N) * d.vocab * 8);
  if (st.plan.any_cut) grow(order_, size_t(st.N) * d.layers * d.kv_heads * st.plan.key_stride * 4);
  // The rolling caches cut in this step keep slots below these; the table's address goes into
  // every pass (null until one is needed), so a graph captured without a rolling cut serves one too.
  for (int i = 0; i < st.N; ++i)
    if (st.plan.items[size_t(i)].cut && st.shapes[size_t(i)].rule.rolling) cover_rope_slots(st.plan.items[size_t(i)].kept);
}

// The readback: chosen tokens and evicted positions first (all a plain decode
// step brings back), then forced scores, captures and layer states.
void CudaBackend::lay_out_readback(Step& st) {
  const int N = st.N, L = dims_.layers, H = dims_.kv_heads;
  st.chosen_at = st.out.add(size_t(N) * 4);
  st.evicted_base.assign(size_t(N), 0);
  int evicted_total = 0;
  for (int i = 0; i < N; ++i) {
    st.evicted_base[size_t(i)] = evicted_total;
    evicted_total += st.plan.items[size_t(i)].evicted * L * H;
  }
  st.evicted_at = st.out.add(size_t(evicted_total) * 4);
  st.counts_at.assign(size_t(N), 0);
  for (int i = 0; i < N; ++i)
    if (st.caches[size_t(i)]->low_bit()) st.counts_at[size_t(i)] = st.out.add(counts_bytes());
  st.plain_end = st.out.size();
  st.forced_at.assign(size_t(N), 0);
  for (int i = 0; i < N; ++i)
    if (st.items[size_t(i)].forced && st.items[size_t(i)].scores)
      st.forced_at[size_t(i)] = st.out.add(size_t(st.shapes[size_t(i)].forced_rows) * 3 * 8, 8);

  // Captures: the full rows of each captured (item, layer), the units that trim them.
  std::vector<kern::CaptureJob> jobs;
  for (int i = 0; st.captures && i < N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    if (item.capture && item.captured)
      jobs.push_back({i, st.plan.items[size_t(i)].keys, st.shapes[size_t(i)].rows, st.shapes[size_t(i)].tokens_seen,
                      &item.capture->attention, item.captured});
  }
  st.capture.emplace(jobs, N, dims_, st.out, st.capture_lists);
  grow(capture_probs_, st.capture->probs_floats() * 4);
  grow(capture_work_, st.capture->work_floats() * 4);

  for (int i = 0; i < N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    if (!item.capture || !item.layer_states) continue;
    const int kept = st.plan.items[size_t(i)].kept;
    for (int layer : item.capture->layer_states) {
      LayerReadout lr;
      lr.item = size_t(i);
      lr.layer = layer;
      lr.positions = st.out.add(size_t(H) * kept * 4);
      lr.scores = st.out.add(size_t(H) * kept * 4);
      st.layer_readouts.push_back(lr);
    }
  }
  grow(readback_, st.out.size());
  readback_host_.reserve(st.out.size());
}

// The inputs block (copied up in one piece) and the pass's arguments: the
// fixed-offset parts first, the capture lists last, so a graph serves every
// step of its key.
void CudaBackend::write_inputs(Step& st) {
  const int N = st.N, T = st.T, R = st.R;
  kern::BlockLayout& in = st.in;
  const std::vector<kern::CaptureSlot> slots =
      st.captures ? st.capture->slots(capture_probs_.as<float>()) : std::vector<kern::CaptureSlot>{};
  const size_t tokens_at = in.add(size_t(T) * 4);
  const size_t row_item_at = in.add(size_t(T) * 4);
  const size_t items_at = in.add(size_t(N) * sizeof(kern::ItemDesc));
  const size_t tiles_at = in.add(st.plan.tiles.size() * sizeof(kern::RowTile));
  const size_t classify_at = in.add(size_t(R) * 4);
  const size_t choose_at = in.add(size_t(N) * sizeof(kern::ChooseDesc));
  int forced_count = 0;
  for (int i = 0; i < N; ++i)
    if (st.items[size_t(i)].forced && st.items[size_t(i)].scores) forced_count += st.shapes[size_t(i)].forced_rows;
  const size_t forced_rows_at = in.add(size_t(forced_count) * sizeof(kern::ForcedRow));
  const size_t slots_at = in.add(slots.size() * sizeof(kern::CaptureSlot));
  const size_t units_at = in.add(st.capture->unit_count() * sizeof(kern::CaptureUnit));
  const size_t lists_at = in.add(st.capture_lists.size(), 256);  // kept-slot lists: their length changes every step
  grow(inputs_, in.size());
  inputs_host_.reserve(in.size());
  char* host = static_cast<char*>(inputs_host_.get());
  char* dev = inputs_.as<char>();

  int* tokens = reinterpret_cast<int*>(host + tokens_at);
  for (int i = 0; i < N; ++i)
    std::copy(st.items[size_t(i)].tokens.begin(), st.items[size_t(i)].tokens.end(),
              tokens + st.plan.items[size_t(i)].first_row);
  put(host + row_item_at, st.plan.row_item.data(), size_t(T) * 4);
  write_item_descs(st, reinterpret_cast<kern::ItemDesc*>(host + items_at));
  put(host + tiles_at, st.plan.tiles.data(), st.plan.tiles.size() * sizeof(kern::RowTile));
  put(host + classify_at, st.plan.classify.data(), size_t(R) * 4);
  write_choices(st, reinterpret_cast<kern::ChooseDesc*>(host + choose_at));
  write_forced_rows(st, reinterpret_cast<kern::ForcedRow*>(host + forced_rows_at));
  put(host + slots_at, slots.data(), slots.size() * sizeof(kern::CaptureSlot));
  const std::vector<kern::CaptureUnit> units =
      st.capture->units(capture_probs_.as<float>(), capture_work_.as<float>(), dev + lists_at, readback_.as<char>());
  put(host + units_at, units.data(), units.size() * sizeof(kern::CaptureUnit));
  st.capture->write_lists(host + lists_at);

  StepArgs& a = st.args;
  a.items = N;
  a.rows = T;
  a.tiles = int(st.plan.tiles.size());
  a.tile_queries = st.plan.tile_queries;
  a.low_bit_tiles = st.plan.low_bit_tiles;
  a.classified = R;
  a.forced = forced_count;
  a.units = int(units.size());
  a.tokens = reinterpret_cast<const int*>(dev + tokens_at);
  a.row_item = reinterpret_cast<const int*>(dev + row_item_at);
  a.item_desc = reinterpret_cast<const kern::ItemDesc*>(dev + items_at);
  a.tile_desc = reinterpret_cast<const kern::RowTile*>(dev + tiles_at);
  a.classify = reinterpret_cast<const int*>(dev + classify_at);
  a.choose = reinterpret_cast<const kern::ChooseDesc*>(dev + choose_at);
  a.forced_rows = reinterpret_cast<const kern::ForcedRow*>(dev + forced_rows_at);
  a.capture_slots = st.captures ? reinterpret_cast<const kern::CaptureSlot*>(dev + slots_at) : nullptr;
  a.capture_units = reinterpret_cast<const kern::CaptureUnit*>(dev + units_at);
  a.attention = {attn_logits_.as<float>(), st.plan.key_stride, partials_.as<float>(), st.plan.split_bucket,
                 stats_.as<float>(), st.plan.split_keys};
  a.evicted = reinterpret_cast<int32_t*>(readback_.as<char>() + st.evicted_at);
  a.any_cut = st.plan.any_cut;
  a.any_forced = st.forced;
  a.rope_slots = rope_slots_.as<float>();
  for (int i = 0; i < N; ++i)
    a.kv_bytes_per_layer += st.caches[size_t(i)]->attention_bytes_per_layer(st.plan.items[size_t(i)].keys);
}

// Each item's cache and cut, as the kernels read them.
void CudaBackend::write_item_descs(const Step& st, kern::ItemDesc* desc) const {
  for (int i = 0; i < st.N; ++i) {
    const kern::ItemShape& s = st.shapes[size_t(i)];
    const kern::ItemPlan& p = st.plan.items[size_t(i)];
    kern::ItemDesc it;
    it.cache = st.caches[size_t(i)]->arrays();
    it.tokens_seen = s.tokens_seen;
    it.n_before = s.n_before;
    it.rows = s.rows;
    it.first_row = p.first_row;
    it.rolling = s.rule.rolling ? 1 : 0;
    it.current_scores = s.rule.score == ScoreKind::Current ? 1 : 0;
    it.cut = p.cut ? 1 : 0;
    it.sinks = s.rule.sinks;
    it.recent = s.rule.recent;
    it.by_score = s.rule.by_score;
    it.kept = p.kept;
    it.evicted_base = st.evicted_base[size_t(i)];
    desc[i] = it;
  }
}

// How each item's next token is chosen (greedy or sampled), and where it lands.
void CudaBackend::write_choices(const Step& st, kern::ChooseDesc* choose) const {
  for (int i = 0; i < st.N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    kern::ChooseDesc c;
    c.out = reinterpret_cast<int32_t*>(readback_.as<char>() + st.chosen_at) + i;
    if (st.shapes[size_t(i)].choose) {
      const SamplingConfig& sc = item.choose->sampling;
      c.mode = sc.greedy() ? 1 : 2;
      c.logits_row = st.plan.items[size_t(i)].logit_row.back();
      c.temperature = sc.temperature;
      c.top_p = sc.top_p;
      c.uniform = item.choose->uniform;
    }
    choose[i] = c;
  }
}

// Forced mode: which cache's stored rows each item compares with (decided
// now, after every forced item of this call has claimed its rows of this
// step), and each scored row's target and outputs.
void CudaBackend::write_forced_rows(Step& st, kern::ForcedRow* forced_rows) const {
  const int N = st.N;
  for (int i = 0; i < N; ++i)
    if (st.items[size_t(i)].forced)
      st.caches[size_t(i)]->mark_forced_rows(st.shapes[size_t(i)].forced_rows,
                                             st.shapes[size_t(i)].tokens_seen + st.shapes[size_t(i)].rows);
  st.compared.assign(size_t(N), false);
  for (int i = 0, k = 0; i < N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    if (!item.forced || !item.scores) continue;
    const auto* reference = static_cast<const CudaCache*>(st.caches[size_t(i)]->same_step_reference(item.forced->reference));
    const int rows = st.shapes[size_t(i)].forced_rows;
    const bool compared = reference != nullptr;
    st.compared[size_t(i)] = compared;
    for (int r = 0; r < rows; ++r, ++k) {
      kern::ForcedRow f;
      f.logits_row = st.plan.items[size_t(i)].logit_row[size_t(r)];
      f.target = item.forced->next[size_t(r)];
      if (compared) {
        f.ref_logits = reference->reference_logits() + size_t(r) * dims_.vocab;
        f.ref_logz = reference->reference_log_z() + r;
      }
      f.out = reinterpret_cast<double*>(readback_.as<char>() + st.forced_at[size_t(i)]) + size_t(r) * 3;
      forced_rows[k] = f;
    }
  }
}

// The inputs up, the pass (from a graph for decode steps), the outputs down;
// the one synchronisation of the step.
void CudaBackend::run(Step& st) {
  const gpu::Stream s = stream_->stream;
  const int H = dims_.kv_heads;
  char* readback = readback_.as<char>();
  if (tuning_.timing) gpu::record(start_, s);
  gpu::copy_to_device(inputs_.as<char>(), inputs_host_.get(), st.in.size(), s);
  if (ops_) ops_->begin();
  if (tuning_.graphs && st.graphable && !ops_) {
    run_graphed(st.args,
                kern::graph_key(st.plan, buffers_generation_, st.captures ? int(st.capture->unit_count()) : -1));
  } else {
    enqueue_pass(st.args);
    if (st.forced) enqueue_forced(st.args, st.items, st.caches, st.plan);
  }
  for (const LayerReadout& lr : st.layer_readouts) {
    const kern::CacheArrays arrays = st.caches[lr.item]->arrays();
    const int kept = st.plan.items[lr.item].kept;
    const size_t first = size_t(lr.layer) * H * size_t(arrays.cap);
    gpu::copy_rows_on_device(readback + lr.positions, size_t(kept) * 4, arrays.pos + first, size_t(arrays.cap) * 4,
                             size_t(kept) * 4, size_t(H), s);
    gpu::copy_rows_on_device(readback + lr.scores, size_t(kept) * 4, arrays.score + first, size_t(arrays.cap) * 4,
                             size_t(kept) * 4, size_t(H), s);
  }
  for (int i = 0; i < st.N; ++i)
    if (st.caches[size_t(i)]->low_bit())
      gpu::copy_on_device(readback + st.counts_at[size_t(i)], st.caches[size_t(i)]->arrays().low.counts,
                          counts_bytes(), s);
  // Plain decode steps bring back only the chosen tokens, the evicted positions and quantized caches' counts.
  const bool plain = st.graphable && !st.captures && st.layer_readouts.empty();
  gpu::copy_to_host(readback_host_.get(), readback, plain ? st.plain_end : st.out.size(), s);
  for (int i = 0; i < st.N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    if (!item.logits) continue;
    const int rows = item.all_logits ? st.shapes[size_t(i)].rows : 1;
    const int first = st.plan.items[size_t(i)].logit_row[size_t(st.shapes[size_t(i)].rows - rows)];
    item.logits->resize(size_t(rows) * dims_.vocab);
    gpu::copy_to_host(item.logits->data(), logits_.as<float>() + size_t(first) * dims_.vocab,
                      item.logits->size() * sizeof(float), s);
  }
  if (tuning_.timing) gpu::record(end_, s);
  gpu::synchronize(s);
  if (tuning_.timing) last_ms_ = gpu::elapsed_ms(start_, end_);
  if (ops_) ops_->end();
  ++forwards_;
}

// What came back, to each item and its cache: the chosen token, the evicted
// positions (checked against the host's count), layer states, forced scores,
// captures.
void CudaBackend::deliver(const Step& st) {
  const char* back = static_cast<const char*>(readback_host_.get());
  const int L = dims_.layers, H = dims_.kv_heads;
  for (int i = 0; i < st.N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    const kern::ItemPlan& p = st.plan.items[size_t(i)];
    if (st.shapes[size_t(i)].choose) *item.chosen = reinterpret_cast<const int32_t*>(back + st.chosen_at)[i];
    std::vector<EvictionEvent> events;
    if (p.cut) {
      const int32_t* e = reinterpret_cast<const int32_t*>(back + st.evicted_at) + st.evicted_base[size_t(i)];
      for (int l = 0; l < L; ++l)
        for (int g = 0; g < H; ++g)
          for (int k = 0; k < p.evicted; ++k) {
            const int32_t position = e[(size_t(l) * H + g) * p.evicted + k];
            if (position < 0)
              throw Error("cuda backend: the device's cut disagrees with the host's count (a bug; please report)");
            events.push_back({l, g, position});
          }
    }
    std::map<int, LayerState> states = layer_states_of(st, size_t(i), back);
    if (item.capture && item.layer_states) {
      item.layer_states->clear();
      for (int layer : item.capture->layer_states) item.layer_states->push_back(states.at(layer));
    }
    std::vector<int32_t> counts;
    if (st.caches[size_t(i)]->low_bit()) {
      const auto* c = reinterpret_cast<const int32_t*>(back + st.counts_at[size_t(i)]);
      counts.assign(c, c + counts_bytes() / sizeof(int32_t));
    }
    st.caches[size_t(i)]->end_forward(st.shapes[size_t(i)].rows, p.kept,
                                      EvictionSummary::from_events(std::move(events), L, H), std::move(states),
                                      std::move(counts));
    if (item.forced && item.scores) {
      *item.scores = {};
      const auto* f = reinterpret_cast<const double*>(back + st.forced_at[size_t(i)]);
      for (int r = 0; r < st.shapes[size_t(i)].forced_rows; ++r) {
        item.scores->nll.push_back(f[r * 3]);
        if (!st.compared[size_t(i)]) continue;
        item.scores->kl.push_back(f[r * 3 + 1]);
        item.scores->agree.push_back(f[r * 3 + 2] != 0 ? 1 : 0);
      }
    }
  }
  st.capture->read(back);
}

// The layer states item `item` asked for, from the readback's host copy.
std::map<int, LayerState> CudaBackend::layer_states_of(const Step& st, size_t item, const char* back) const {
  const int kept = st.plan.items[item].kept;
  std::map<int, LayerState> states;
  for (const LayerReadout& lr : st.layer_readouts) {
    if (lr.item != item) continue;
    LayerState& state = states[lr.layer];
    state.layer = lr.layer;
    for (int g = 0; g < dims_.kv_heads; ++g) {
      const auto* pos = reinterpret_cast<const int32_t*>(back + lr.positions) + size_t(g) * kept;
      const auto* sc = reinterpret_cast<const float*>(back + lr.scores) + size_t(g) * kept;
      state.positions.emplace_back(pos, pos + kept);
      state.scores.emplace_back(sc, sc + kept);
    }
  }
  return states;
}

// A decode step from its graph: the first step of a key runs eagerly (kernels and cuBLAS loaded
// outside a capture), the second is captured and launched, later ones replay it.
void CudaBackend::run_graphed(const StepArgs& a, const kern::GraphKey& key) {
  const gpu::Stream s = stream_->stream;
  std::optional<gpu::Graph> graph = graphs_.find(key);
  if (!graph && !graphs_.seen_before(key)) {
    enqueue_pass(a);
    return;
  }
  if (!graph) {
    gpu::begin_capture(s);
    try {
      enqueue_pass(a);
    } catch (...) {
      try {
        (void)gpu::end_capture(s);
      } catch (...) {
      }
      throw;
    }
    graph = gpu::end_capture(s);
    graphs_.insert(key, *graph);
    ++graph_captures_;
  } else {
    ++graph_replays_;
  }
  gpu::launch_graph(*graph, s);
}

// Forced mode after the pass: log Z of the classified rows, each forced
// item's rows kept in its cache (the reference for others, now or later in
// this step), then the scores against the reference rows.
void CudaBackend::enqueue_forced(const StepArgs& a, std::span<ForwardItem> items, const std::vector<CudaCache*>& caches,
                                 const kern::StepPlan& plan) {
  const gpu::Stream s = stream_->stream;
  const int vocab = dims_.vocab;
  kern::row_log_z(logits_.as<float>(), a.classified, vocab, log_z_.as<double>(), tuning_.threads, s);
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].forced || caches[i]->forced_rows() == 0) continue;
    const int first = plan.items[i].logit_row[0];
    const int rows = caches[i]->forced_rows();
    gpu::copy_on_device(caches[i]->reference_logits(), logits_.as<float>() + size_t(first) * vocab,
                        size_t(rows) * vocab * sizeof(float), s);
    gpu::copy_on_device(caches[i]->reference_log_z(), log_z_.as<double>() + first, size_t(rows) * sizeof(double), s);
  }
  kern::forced_scores(logits_.as<float>(), log_z_.as<double>(), a.forced_rows, a.forced, vocab, tuning_.threads, s);
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, const BackendOptions& options) {
  CudaTuning tuning;
  // For an A/B of the projections in one GPU run of h2o-bench or h2o-cli
  // (cuda_backend.h): 0 puts every projection on cuBLAS.
  if (const char* rows = std::getenv("H2O_CUDA_MATVEC_ROWS"); rows && *rows) {
    char* end = nullptr;
    const long value = std::strtol(rows, &end, 10);
    if (*end != '\0' || value < 0 || value > kern::kMatvecMaxRows)
      throw Error(std::string("H2O_CUDA_MATVEC_ROWS=") + rows + ": not a row count in [0, " +
                  std::to_string(kern::kMatvecMaxRows) + "]");
    tuning.matvec_rows = int(value);
  }
  return make_cuda_backend(std::move(model), options, tuning);
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, const BackendOptions& options,
                                           const CudaTuning& tuning) {
  return std::make_unique<CudaBackend>(std::move(model), options, tuning);
}

double cuda_last_forward_ms(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  return cuda ? cuda->last_forward_ms() : NAN;
}

CudaBackendStats cuda_backend_stats(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  return cuda ? cuda->stats() : CudaBackendStats{};
}

bool cuda_set_op_timing(Backend& backend, bool on) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (cuda) cuda->set_op_timing(on);
  return cuda != nullptr;
}

std::vector<CudaOpTime> cuda_op_times(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  std::vector<CudaOpTime> out;
  if (!cuda) return out;
  for (const kern::OpTime& t : cuda->op_times()) out.push_back({t.op, t.launches, t.ms, t.bytes});
  return out;
}

double cuda_copy_bandwidth_gbs(int64_t bytes, int repeats) {
  gpu::open_device();
  SharedStream stream;
  gpu::DeviceBuffer a(static_cast<size_t>(bytes)), b(static_cast<size_t>(bytes));
  gpu::fill_on_device(a.get(), 1, size_t(bytes), stream.stream);
  gpu::Event start = gpu::create_event(), end = gpu::create_event();
  std::vector<double> ms;
  try {
    for (int r = -2; r < std::max(repeats, 1); ++r) {  // two warm-up copies first
      gpu::record(start, stream.stream);
      gpu::copy_on_device(b.get(), a.get(), size_t(bytes), stream.stream);
      gpu::record(end, stream.stream);
      gpu::synchronize(stream.stream);
      if (r >= 0) ms.push_back(gpu::elapsed_ms(start, end));
    }
  } catch (...) {
    gpu::destroy_event(start);
    gpu::destroy_event(end);
    throw;
  }
  gpu::destroy_event(start);
  gpu::destroy_event(end);
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  return 2.0 * double(bytes) / (median * 1e-3) / 1e9;
}

}  // namespace H2O_CUDA_NS
