#pragma once
// One session's KV cache in device memory. Layout: one allocation per array,
// each [layer][kv_head][cap] rows — keys (rotated), values, pre-RoPE keys
// (rolling positions only), stream positions (int32) and scores (f32) — in
// the backend's storage type. Every (layer, KV head) holds the same number
// of tokens (a cut keeps the same count everywhere), so that count, the
// tokens seen and the byte counts are host bookkeeping; the device is read
// only for what a forward pass brings back.
#include <cstdint>
#include <map>
#include <memory>

#include "core/runtime/cache_book.h"
#include "kernels/device_buffer.h"
#include "kernels/step_desc.h"

namespace H2O_CUDA_NS {

// The stream every cache of one backend enqueues on, alive as long as any of them.
struct SharedStream {
  gpu::Stream stream = nullptr;
  SharedStream() : stream(gpu::create_stream()) {}
  ~SharedStream() { gpu::destroy_stream(stream); }
  SharedStream(const SharedStream&) = delete;
  SharedStream& operator=(const SharedStream&) = delete;
};

class CudaCache final : public CacheBook {
 public:
  CudaCache(const PolicyConfig& policy, const kern::ModelDims& dims, DType storage, std::shared_ptr<SharedStream> stream,
            std::shared_ptr<KvMemoryAccount> account);
  ~CudaCache() override;
  CudaCache(const CudaCache&) = delete;
  CudaCache& operator=(const CudaCache&) = delete;

  int size(int, int) const override { return held_; }
  // The layer as the last forward pass brought it back, else read now (a synchronous copy).
  LayerState read_layer(int layer) const override;
  // SEMANTICS.md: cached tokens x head_dim x 2 (K and V) x bytes per element, over every (layer, KV head).
  int64_t live_bytes() const override;
  // Every device byte the cache reserved: K, V, pre-RoPE keys, positions and scores.
  int64_t allocated_bytes() const override { return booked_bytes(); }

  // ---- for the backend ----
  int held() const { return held_; }
  int capacity() const { return cap_; }
  // Room for `rows` more tokens in every head: bounded caches reserve
  // budget + slack + rows once, the full cache grows by half (as the CPU
  // cache). Throws CacheCannotGrow, having changed nothing, at the KV limit or
  // when the device is full.
  void reserve_for(int rows);
  // Bytes one token takes in every array of one (layer, KV head).
  static int64_t row_bytes(const kern::ModelDims& dims, DType storage, bool rolling);
  kern::CacheArrays arrays() const;
  // After the step: `rows` more seen, `kept` held by every head, what left, what was read.
  void end_forward(int rows, int kept, EvictionSummary evictions, std::map<int, LayerState> layers);

  // Teacher forcing: this cache's classified rows of its last forced step
  // (logits and log Z), kept on the device for the sessions compared with it
  // (CacheBook::mark_forced_rows).
  void reserve_reference(int rows, int vocab);
  float* reference_logits() const { return reference_logits_.as<float>(); }
  double* reference_log_z() const { return reference_log_z_.as<double>(); }

 private:
  kern::ModelDims dims_;
  DType storage_;
  std::shared_ptr<SharedStream> stream_;
  int held_ = 0, cap_ = 0;
  gpu::DeviceBuffer k_, v_, k_raw_, pos_, score_;
  gpu::DeviceBuffer reference_logits_, reference_log_z_;
  std::map<int, LayerState> last_layers_;
};

}  // namespace H2O_CUDA_NS
