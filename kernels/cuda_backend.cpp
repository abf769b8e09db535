// The CUDA backend's host side: it plans each step from host bookkeeping
// (kernels/step_plan.h), writes the step's small inputs into one block that
// is copied up once, enqueues the whole forward pass on one stream — or
// replays it from a CUDA graph for decode steps — and copies the small
// outputs back once (chosen tokens, evicted positions, forced-mode scores,
// trimmed captures, layer states): one synchronisation per step.
//
// The pass itself: cuda_pass.cpp; the step's inputs and outputs: cuda_step_io.cpp.
#include "kernels/cuda_backend_impl.h"

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

// The KV cache's element type: f32 with f32 weights (--precision f32, the
// exact path), else f16 — at native precision too (a quantized file's matrices
// are read in their own blocks; an f32 cache would be about a third of a 7B
// step's bytes at 2048 tokens) and for bf16 weights: keys and values need
// f16's three more mantissa bits far more than bf16's range (llama.cpp's
// default KV type is f16 as well). f16 KV is exactly the CPU's --kv-bits 16.
DType kv_storage_for(const kern::Precision& p) {
  return p.storage == DType::F32 && !p.native ? DType::F32 : DType::F16;
}

}  // namespace
namespace cuda_impl {

CudaBackend::CudaBackend(std::shared_ptr<const Model> model, const BackendOptions& options, const CudaTuning& tuning)
    : model_(std::move(model)),
      cfg_(model_->config),
      dims_(dims_of(cfg_)),
      precision_(kern::resolve_precision(options.precision, *model_)),
      storage_(precision_.storage),
      kv_(kv_storage_for(precision_)),
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
  blas_ = std::make_unique<kern::Blas>(stream_->stream, tuning_.matvec_rows, weights_->dequant_scratch(),
                                       int8_inputs() ? weights_->int8_cols() : 0);
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
                    (precision_.native ? std::string(int8_inputs() ? "8-bit" : dtype_name(storage_)) + " activations, "
                                       : std::string()) +
                    // The device cache's type: a quantized session (--kv-bits) keeps its own codes in it.
                    dtype_name(kv_) + " KV unless quantized, " + (tuning_.graphs ? "graphs" : "no graphs");
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

std::unique_ptr<SessionCache> CudaBackend::fork(const SessionCache& cache) {
  const auto* own = dynamic_cast<const CudaCache*>(&cache);
  if (!own || !own->booked_in(*account_)) throw Error(name() + " backend: fork: the cache was not made by this backend");
  return own->fork();
}

// One forward pass, as named steps: plan it from host bookkeeping, size the
// scratch, lay out what comes back, write the inputs block, run (a graph for
// decode steps), and hand each item what it asked for.
void CudaBackend::forward(std::span<ForwardItem> items) {
  if (items.empty()) return;
  StepIO step(items, dims_, info_.multiprocessors);
  const uint64_t generation = scratch_.generation;
  grow_scratch(step);
  step.lay_out_readback(scratch_);
  step.write_inputs(scratch_);
  if (scratch_.generation != generation) graphs_.clear();  // they hold the old addresses (and keys)
  run(step);
  step.deliver(scratch_);
}

// Activations and scratch for the step's rows, keys and classified rows.
void CudaBackend::grow_scratch(const StepIO& step) {
  const kern::ModelDims& d = dims_;
  const kern::StepPlan& plan = step.plan();
  PassScratch& s = scratch_;
  const size_t elem = size_t(dtype_size(storage_)), T = size_t(plan.rows);
  const size_t R = std::max<size_t>(plan.classify.size(), 1), N = step.items().size();
  s.grow(s.x, T * d.dim * 4);
  s.grow(s.xb, T * d.dim * elem);
  s.grow(s.qkv, T * d.qkv_stride * 4);
  s.grow(s.att, T * d.q_dim * elem);
  s.grow(s.gate_up, T * 2 * d.hidden * 4);
  s.grow(s.hidden, T * d.hidden * elem);
  s.grow(s.attn_logits, T * d.heads * plan.key_stride * 4);
  s.grow(s.partials, T * d.heads * plan.split_bucket * (d.head_dim + 2) * 4);
  s.grow(s.stats, T * d.heads * 2 * 4);
  if (s.grow(s.arrivals, T * d.kv_heads * 4))  // the kernels leave them at zero; a new buffer starts there
    gpu::fill_on_device(s.arrivals.get(), 0, s.arrivals.bytes(), stream_->stream);
  s.grow(s.classify_in, R * d.dim * elem);
  s.grow(s.logits, R * d.vocab * 4);
  s.grow(s.log_z, R * 8);
  if (step.any_sample()) s.grow(s.sample, N * d.vocab * 8);
  if (plan.any_cut) s.grow(s.order, N * d.layers * d.kv_heads * plan.key_stride * 4);
  // The rolling caches cut in this step keep slots below these; the table's address goes into
  // every pass (null until one is needed), so a graph captured without a rolling cut serves one too.
  for (size_t i = 0; i < N; ++i)
    if (plan.items[i].cut && step.shapes()[i].rule.rolling) cover_rope_slots(plan.items[i].kept);
}

// The inputs up, the pass (from a graph for decode steps), the outputs down;
// the one synchronisation of the step.
void CudaBackend::run(StepIO& step) {
  const gpu::Stream s = stream_->stream;
  if (tuning_.timing) gpu::record(start_, s);
  gpu::copy_to_device(scratch_.inputs.as<char>(), scratch_.inputs_host.get(), step.inputs_bytes(), s);
  if (ops_) ops_->begin();
  if (tuning_.graphs && step.graphable() && !ops_) {
    run_graphed(step.args(), kern::graph_key(step.plan(), scratch_.generation, step.capture_key()));
  } else {
    enqueue_pass(step.args());
    if (step.forced()) enqueue_forced(step.args(), step);
  }
  step.enqueue_readback(scratch_, s);
  if (tuning_.timing) gpu::record(end_, s);
  gpu::synchronize(s);
  if (tuning_.timing) last_ms_ = gpu::elapsed_ms(start_, end_);
  if (ops_) ops_->end();
  ++forwards_;
}

}  // namespace cuda_impl

using cuda_impl::CudaBackend;

namespace {

// An integer in [low, high] from environment variable `name`, or `fallback` where it is unset.
int env_int(const char* name, int low, int high, int fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < low || value > high)
    throw Error(std::string(name) + "=" + text + ": not an integer in [" + std::to_string(low) + ", " +
                std::to_string(high) + "]");
  return int(value);
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, const BackendOptions& options) {
  CudaTuning tuning;
  // For A/Bs in one GPU run of h2o-bench or h2o-cli (cuda_backend.h): 0 puts
  // every projection on cuBLAS; H2O_CUDA_INT8=0 multiplies f32 inputs at native.
  tuning.matvec_rows = env_int("H2O_CUDA_MATVEC_ROWS", 0, kern::kMatvecMaxRows, tuning.matvec_rows);
  tuning.int8_activations = env_int("H2O_CUDA_INT8", 0, 1, tuning.int8_activations ? 1 : 0) != 0;
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
