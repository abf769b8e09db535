#pragma once
// Internal to the CUDA backend (cuda_backend.cpp, cuda_pass.cpp): the
// backend's class, over its scratch (cuda_scratch.h) and one step's I/O
// (cuda_step_io.h). Not for other code: make one with make_cuda_backend
// (cuda_backend.h).
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
#include "kernels/cuda_scratch.h"
#include "kernels/cuda_step_io.h"
#include "kernels/device_buffer.h"
#include "kernels/device_weights.h"
#include "kernels/graph_cache.h"
#include "kernels/launch.h"
#include "kernels/op_timer.h"
#include "kernels/step_plan.h"
#include "kernels/weight_convert.h"

namespace H2O_CUDA_NS {
namespace cuda_impl {

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const Model> model, const BackendOptions& options, const CudaTuning& tuning);
  ~CudaBackend() override;

  // The emulated build's (kernels/simt) is the same class on a device that says it is emulated.
  std::string name() const override { return info_.emulated ? "cuda-sim" : "cuda"; }
  std::string describe() const override;
  const Model& model() const override { return *model_; }
  std::unique_ptr<SessionCache> new_cache(const PolicyConfig& policy) override;
  std::unique_ptr<SessionCache> fork(const SessionCache& cache) override;
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
  // Whether block-format products of few rows take 8-bit inputs (CudaTuning::int8_activations).
  bool int8_inputs() const { return precision_.native && tuning_.int8_activations && weights_->int8_cols() > 0; }
  // Makes the cut's cos/sin table (kernels/rope_slots.cu) cover slots < `slots`; outside any capture.
  void cover_rope_slots(int slots);
  void embed(const int* tokens, float* x, int rows);
  void enqueue_pass(const StepArgs& a);
  // The pass's named steps (enqueue_pass), each a few launches.
  void mark(const char* op, int64_t bytes = 0);
  // Returns `next`'s 8-bit input where it wrote that too, into Blas's set
  // `set` (Blas::int8_input); empty where it did not (next null: never).
  kern::Int8Rows normalize(const float* x, const float* weight, const float* bias, void* out, const int* row_map,
                           int rows, const kern::DeviceMatrix* next, int set = 0);
  // `quantized`: in's 8-bit rows where its producer wrote them, else empty.
  void project_into_residual(const void* in, const kern::DeviceMatrix& w, const float* bias, int rows, const char* op,
                             const kern::Int8Rows& quantized = {});
  void enqueue_layer(const StepArgs& a, int layer);
  // `normed`: the normed rows' 8-bit form where normalize wrote it. Returns
  // the output's 8-bit form where the combine wrote it for the output projection.
  kern::Int8Rows enqueue_attention(const StepArgs& a, int layer, const kern::Int8Rows& normed);
  void enqueue_ffn(const kern::DeviceLayerWeights& w, int rows, const kern::Int8Rows& normed);
  void run_graphed(const StepArgs& a, const kern::GraphKey& key);
  void enqueue_forced(const StepArgs& a, const StepIO& step);
  // forward()'s named steps besides the step's own I/O (StepIO).
  void grow_scratch(const StepIO& step);
  void run(StepIO& step);

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

  PassScratch scratch_;  // activations, scratch, a step's inputs block and readback (grown, never shrunk)

  kern::GraphCache<gpu::Graph> graphs_;
  gpu::Event start_ = nullptr, end_ = nullptr;
  double last_ms_ = NAN;
  std::unique_ptr<kern::OpTimer> ops_;  // set while --op-times measures
  int64_t forwards_ = 0, graph_replays_ = 0, graph_captures_ = 0;
};

}  // namespace cuda_impl
}  // namespace H2O_CUDA_NS
