// RoPE and append: each new row's queries are rotated in place; its keys are
// rotated into the cache at the item's next slot (and kept before rotation
// under rolling positions, for re-rotation after a cut), with its values,
// stream position and a zero score. The angle is the row's stream position,
// or its slot under rolling positions (SEMANTICS.md). Where the model has
// q/k/v biases (Qwen2, GPT-NeoX) each value takes its bias as it is read, the
// same f32 sum a separate bias launch made before the rotation.
#include <algorithm>

#include "kernels/launch.h"
#include "kernels/low_bit_rows.cuh"
#include "kernels/rope.cuh"

namespace H2O_KERN_NS {
namespace {

// One row of the Q|K|V projection (q_dim queries, then kv_dim keys, then
// kv_dim values) as RoPE reads it: each value with its bias added where the
// model has one.
struct QkvRow {
  float* row;
  const float* bias;  // null: none
  int q_dim, kv_dim;
  __device__ float at(int e) const { return bias ? row[e] + bias[e] : row[e]; }
  __device__ float query(int e) const { return at(e); }
  __device__ float key(int e) const { return at(q_dim + e); }
  __device__ float value(int e) const { return at(q_dim + kv_dim + e); }
};

// The position and a zero score of `slot` in every KV head.
__device__ void append_slot(const ItemDesc& it, int layer, int slot, long long stream_pos, const ModelDims& d) {
  for (int g = int(threadIdx.x); g < d.kv_heads; g += int(blockDim.x)) {
    const size_t at = (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap) + size_t(slot);
    it.cache.pos[at] = int32_t(stream_pos);
    it.cache.score[at] = 0.0f;
  }
}

// A quantized cache: the new key and value rounded to f16 as its next f16 row
// (a sink or the residual's newest: slot - quantized, its counts being those
// of the step's start); the flush at the step's end takes them in.
__device__ void append_low_bit(const ItemDesc& it, int layer, int slot, const QkvRow& in, SharedPtr<float> cos_of,
                               SharedPtr<float> sin_of, const ModelDims& d) {
  const int hd = d.head_dim, half = hd / 2;
  const LowBitArrays& a = it.cache.low;
  for (int p = int(threadIdx.x); p < d.kv_heads * half; p += int(blockDim.x)) {
    const int g = p / half, i = p % half;
    const size_t head = size_t(layer) * d.kv_heads + g;
    const int row = slot - a.counts[head * kCounts + kQuantized];
    const size_t at = (head * size_t(a.full_cap) + size_t(row)) * hd + 2 * i;
    float r0, r1;
    rope_rotate(in.key(g * hd + 2 * i), in.key(g * hd + 2 * i + 1), cos_of[i], sin_of[i], &r0, &r1);
    a.full_k[at] = f32_to_half_bits(r0);
    a.full_k[at + 1] = f32_to_half_bits(r1);
    a.full_v[at] = f32_to_half_bits(in.value(g * hd + 2 * i));
    a.full_v[at + 1] = f32_to_half_bits(in.value(g * hd + 2 * i + 1));
  }
  append_slot(it, layer, slot, it.tokens_seen + (slot - it.n_before), d);
}

template <class T>
__global__ void rope_append_kernel(float* qkv, const float* bias, const ItemDesc* items, const int* row_item, int layer,
                                   ModelDims d) {
  H2O_SHARED(float, cos_of, [kMaxHeadDim / 2]);
  H2O_SHARED(float, sin_of, [kMaxHeadDim / 2]);
  const int row = int(blockIdx.x);
  const ItemDesc& it = items[row_item[row]];
  const int r = row - it.first_row, slot = it.n_before + r, hd = d.head_dim, half = hd / 2;
  const long long stream_pos = it.tokens_seen + r;
  const double pos = it.rolling ? double(slot) : double(stream_pos);
  for (int i = int(threadIdx.x); i < half; i += int(blockDim.x))
    rope_angle(pos, d.rope_freq[i], &cos_of[i], &sin_of[i]);
  __syncthreads();

  const QkvRow in{qkv + size_t(row) * size_t(d.qkv_stride), bias, d.q_dim, d.kv_dim};
  for (int p = int(threadIdx.x); p < d.heads * half; p += int(blockDim.x)) {
    const int h = p / half, i = p % half, e = h * hd + 2 * i;
    rope_rotate(in.query(e), in.query(e + 1), cos_of[i], sin_of[i], &in.row[e], &in.row[e + 1]);
  }
  if (it.cache.low.used()) return append_low_bit(it, layer, slot, in, cos_of, sin_of, d);
  T* keys = static_cast<T*>(it.cache.k);
  T* raw = static_cast<T*>(it.cache.k_raw);
  T* values = static_cast<T*>(it.cache.v);
  for (int p = int(threadIdx.x); p < d.kv_heads * half; p += int(blockDim.x)) {
    const int g = p / half, i = p % half;
    const size_t at = ((size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap) + size_t(slot)) * hd + 2 * i;
    const float k0 = in.key(g * hd + 2 * i), k1 = in.key(g * hd + 2 * i + 1);
    float r0, r1;
    rope_rotate(k0, k1, cos_of[i], sin_of[i], &r0, &r1);
    keys[at] = from_f32<T>(r0);
    keys[at + 1] = from_f32<T>(r1);
    if (it.rolling) {
      raw[at] = from_f32<T>(k0);
      raw[at + 1] = from_f32<T>(k1);
    }
    values[at] = from_f32<T>(in.value(g * hd + 2 * i));
    values[at + 1] = from_f32<T>(in.value(g * hd + 2 * i + 1));
  }
  append_slot(it, layer, slot, stream_pos, d);
}

}  // namespace

void rope_append(DType dtype, float* qkv, const float* bias, const ItemDesc* items, const int* row_item, int rows,
                 int layer, const ModelDims& dims, gpu::Stream stream) {
  // A block as wide as a row's query pairs (up to 1024 threads): a decode step has one row a
  // session, and the tuning's 128 threads took 16 pairs each on one SM (17.7 µs a launch at 7B).
  const int threads = std::min(1024, std::max(32, (dims.heads * (dims.head_dim / 2) + 31) / 32 * 32));
  H2O_WITH_STORAGE(dtype, T,
                   H2O_LAUNCH(dim3(unsigned(rows)), dim3(unsigned(threads)), stream, rope_append_kernel<T>)(
                       qkv, bias, items, row_item, layer, dims));
  gpu::check_launch("rope_append");
}

}  // namespace H2O_KERN_NS
