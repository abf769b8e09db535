#pragma once
// Internal to the CUDA backend (cuda_backend.cpp, cuda_step_io.cpp,
// cuda_pass.cpp): the backend's class, one step's host state (Step) and the
// device pointers its pass takes (StepArgs). Not for other code: make one
// with make_cuda_backend (cuda_backend.h).
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
namespace cuda_impl {

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

}  // namespace cuda_impl
}  // namespace H2O_CUDA_NS
