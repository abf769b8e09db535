#pragma once
// One CUDA backend's activations and scratch on the device, and the pinned
// host copies of a step's inputs block and readback: grown to each step's
// size, never shrunk. A buffer that moves bumps `generation`; captured graphs
// hold the old addresses, so the graph key carries it (kernels/graph_cache.h).
#include <cstddef>
#include <cstdint>

#include "kernels/device_buffer.h"

namespace H2O_CUDA_NS {
namespace cuda_impl {

struct PassScratch {
  gpu::DeviceBuffer x, xb, qkv, att, gate_up, hidden;  // the residual stream, normed rows, Q|K|V, heads, FFN
  gpu::DeviceBuffer attn_logits, partials, stats;      // attention's split-K scratch (kern::AttentionScratch)
  gpu::DeviceBuffer arrivals;                          // its tiles' split counters: zeroed once, reset by the kernels
  gpu::DeviceBuffer classify_in, logits, log_z, sample;  // the classified rows and the sampler
  gpu::DeviceBuffer capture_probs, capture_work;       // attention captures
  gpu::DeviceBuffer order;                             // the cut's survivor order
  gpu::DeviceBuffer rope_slots;                        // the cut's cos/sin per slot (rolling positions)
  int rope_slot_rows = 0;                              // slots rope_slots holds
  gpu::DeviceBuffer inputs, readback;                  // a step's inputs block and its readback
  gpu::PinnedBuffer inputs_host, readback_host;
  uint64_t generation = 0;

  // `buffer` with room for `bytes` at least, in powers of two from 256 (few
  // moves, so graphs are rarely invalidated); true where it moved (its contents lost).
  bool grow(gpu::DeviceBuffer& buffer, size_t bytes) {
    if (bytes <= buffer.bytes()) return false;
    size_t rounded = 256;
    while (rounded < bytes) rounded *= 2;
    buffer.reserve(rounded);
    ++generation;
    return true;
  }
};

}  // namespace cuda_impl
}  // namespace H2O_CUDA_NS
