#pragma once
// One session's KV cache in device memory. Layout: one allocation per array,
// each [layer][kv_head][cap] rows — keys (rotated), values, pre-RoPE keys
// (rolling positions only), stream positions (int32) and scores (f32) — in
// the backend's storage type. Every (layer, KV head) holds the same number
// of tokens (a cut keeps the same count everywhere), so that count, the
// tokens seen and the byte counts are host bookkeeping; the device is read
// only for what a forward pass brings back.
//
// At a quantized precision (--kv-bits 8, 4, 2) the keys and values live in
// step_desc.h's LowBitArrays instead: f16 rows for the sinks and residual,
// code rows for the quantized run, the groups' numbers. How long each head's
// runs are differs from head to head after cuts; the device keeps those
// counts, and each step brings them back (end_forward) for the capacities
// and the live bytes.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

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
  // Backend::fork: every array copied on the device at the same capacity, and
  // the host's counts, booked in the same account (CacheCannotGrow past its
  // limit or when the device is full, booking nothing).
  std::unique_ptr<CudaCache> fork() const;

  int size(int, int) const override { return held_; }
  // The layer as the last forward pass brought it back, else read now (a synchronous copy).
  LayerState read_layer(int layer) const override;
  // SEMANTICS.md: cached tokens x head_dim x 2 (K and V) x bytes per element, over every (layer, KV head).
  int64_t live_bytes() const override;
  int quantized_tokens() const override;
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
  bool low_bit() const { return low_bit_; }
  // Keys and values attention reads in one layer over `keys` slots (for --op-times).
  int64_t attention_bytes_per_layer(int keys) const;
  // After the step: `rows` more seen, `kept` held by every head, what left,
  // what was read; a quantized cache's counts ([layer][kv_head][kCounts]).
  void end_forward(int rows, int kept, EvictionSummary evictions, std::map<int, LayerState> layers,
                   std::vector<int32_t> counts = {});

  // Teacher forcing: this cache's classified rows of its last forced step
  // (logits and log Z), kept on the device for the sessions compared with it
  // (CacheBook::mark_forced_rows).
  void reserve_reference(int rows, int vocab);
  float* reference_logits() const { return reference_logits_.as<float>(); }
  double* reference_log_z() const { return reference_log_z_.as<double>(); }

 private:
  // A quantized cache's capacities for a step of `rows`: f16 rows, key groups.
  struct LowBitCaps {
    int full = 0, groups = 0;
  };
  LowBitCaps low_bit_caps(int slots, int rows) const;
  CudaCache(const CudaCache& other, int64_t bytes);
  // One array, [layer][kv_head][rows] of row_bytes (0: not kept), from old_rows to new_rows, `used` of them held.
  struct Run {
    gpu::DeviceBuffer* buffer;
    size_t row_bytes;
    int old_rows, new_rows, used;
  };
  std::vector<Run> runs(int target, const LowBitCaps& caps);
  void regrow(int target, const LowBitCaps& caps);

  kern::ModelDims dims_;
  DType storage_;
  std::shared_ptr<SharedStream> stream_;
  int held_ = 0, cap_ = 0;
  gpu::DeviceBuffer k_, v_, k_raw_, pos_, score_;
  // A quantized cache (LowBitArrays), and its counts as the last step left them.
  bool low_bit_ = false;
  LowBitCaps low_caps_;
  gpu::DeviceBuffer full_k_, full_v_, quant_k_, quant_v_, value_scales_, key_scales_, group_of_, counts_device_;
  std::vector<int32_t> counts_;  // [layer][kv_head][kCounts], as the last step left them
  gpu::DeviceBuffer reference_logits_, reference_log_z_;
  std::map<int, LayerState> last_layers_;
};

}  // namespace H2O_CUDA_NS
