// The end of a step for quantized caches (SEMANTICS.md, "KV precision"), a
// block per (layer, KV head) of each quantized item, after the cut: the
// head's counts take in the rows this step appended, then, while its residual
// holds R + G tokens or more, its oldest G are quantized as one key group —
// keys per channel over the G tokens, values per token over runs of G
// channels — and the rest of the residual moves down over them. A flush at
// the end of this step and one at the start of the next are the same to
// attention; the CPU's LowBitHead::flush does the same, bit for bit.
#include "kernels/launch.h"
#include "kernels/low_bit_rows.cuh"
#include "kernels/move_rows.cuh"

namespace H2O_KERN_NS {
namespace {

// The packed code rows (kvq::pack_row's planes) of `tokens` f16 rows of hd
// channels: channel c of token t under scale_of(t, c), a thread a byte.
template <class ScaleOf>
__device__ void pack_codes(const uint16_t* rows, int tokens, int hd, int bits, ScaleOf scale_of, uint8_t* packed) {
  const int row_bytes = low_bit_row_bytes(hd, bits), per = 8 / bits;
  for (int e = int(threadIdx.x); e < tokens * row_bytes; e += int(blockDim.x)) {
    const int t = e / row_bytes, j = e % row_bytes;
    uint32_t byte = 0;
    for (int k = 0; k < per; ++k) {
      const int c = j + k * row_bytes;
      byte |= code_of(half_bits_to_f32(rows[size_t(t) * hd + c]), scale_of(t, c), bits) << (k * bits);
    }
    packed[size_t(t) * row_bytes + j] = uint8_t(byte);
  }
}

// Group `id` from the f16 rows at `rows` (G tokens): per channel c its (m, s)
// into key_scales, then each token's packed codes (kvq::pack_row's planes).
__device__ void quantize_keys(const LowBitHead& h, const uint16_t* rows, int id, uint8_t* packed) {
  const int tid = int(threadIdx.x), threads = int(blockDim.x), G = h.group, hd = h.hd, bits = h.key_bits;
  uint32_t* scales = h.key_scales + size_t(id) * hd;
  for (int c = tid; c < hd; c += threads) {
    float lo = half_bits_to_f32(rows[c]), hi = lo;
    for (int t = 1; t < G; ++t) {  // as std::min / std::max keep the first of equals (-0 and +0 included)
      const float x = half_bits_to_f32(rows[size_t(t) * hd + c]);
      lo = x < lo ? x : lo;
      hi = hi < x ? x : hi;
    }
    scales[c] = scale_of(lo, hi, bits);
  }
  __syncthreads();
  pack_codes(rows, G, hd, bits, [&](int, int c) { return scales[c]; }, packed);
}

// G values from the f16 rows at `rows`: per token and run of G channels its
// (m, s) into `scales` (runs a token), then the token's packed codes.
__device__ void quantize_values(const LowBitHead& h, const uint16_t* rows, uint32_t* scales, uint8_t* packed) {
  const int tid = int(threadIdx.x), threads = int(blockDim.x), G = h.group, hd = h.hd, bits = h.value_bits;
  const int runs = hd / G;
  for (int e = tid; e < G * runs; e += threads) {
    const int t = e / runs, run = e % runs;
    const uint16_t* x = rows + size_t(t) * hd + size_t(run) * G;
    float lo = half_bits_to_f32(x[0]), hi = lo;
    for (int c = 1; c < G; ++c) {  // as std::minmax_element: the first smallest, the last largest
      const float e = half_bits_to_f32(x[c]);
      lo = e < lo ? e : lo;
      hi = e < hi ? hi : e;
    }
    scales[size_t(t) * runs + run] = scale_of(lo, hi, bits);
  }
  __syncthreads();
  pack_codes(rows, G, hd, bits, [&](int t, int c) { return scales[size_t(t) * runs + c / G]; }, packed);
}

// A half kept at 16 bits in the quantized run: its f16 rows copied as they are.
__device__ void copy_f16_rows(const uint16_t* rows, int count, int hd, uint8_t* out) {
  uint16_t* to = reinterpret_cast<uint16_t*>(out);
  for (int e = int(threadIdx.x); e < count * hd; e += int(blockDim.x)) to[e] = rows[e];
}

// The G f16 rows from full row `from` on become key group `id` at quantized row `row`.
__device__ void flush_group(const LowBitHead& h, int from, int row, int id) {
  const uint16_t* keys = h.full_k + size_t(from) * h.hd;
  const uint16_t* values = h.full_v + size_t(from) * h.hd;
  uint8_t* packed_k = h.quant_k + size_t(row) * h.key_row_bytes;
  uint8_t* packed_v = h.quant_v + size_t(row) * h.value_row_bytes;
  if (h.key_bits < 16)
    quantize_keys(h, keys, id, packed_k);
  else
    copy_f16_rows(keys, h.group, h.hd, packed_k);
  if (h.value_bits < 16)
    quantize_values(h, values, h.value_scales + size_t(row) * (h.hd / h.group), packed_v);
  else
    copy_f16_rows(values, h.group, h.hd, packed_v);
  for (int t = int(threadIdx.x); t < h.group; t += int(blockDim.x)) h.group_of[row + t] = id;
  __syncthreads();  // the rows are read before the residual moves over them
}

__global__ void kv_flush_kernel(const ItemDesc* items, ModelDims d) {
  const ItemDesc& it = items[blockIdx.y];
  if (it.cache.low.key_bits == 0) return;  // the grid covers every item, so one graph serves any mix
  const int layer = int(blockIdx.x) / d.kv_heads, g = int(blockIdx.x) % d.kv_heads;
  LowBitHead h = low_bit_head(it.cache, layer, g, d.kv_heads, d.head_dim);
  // This step's rows: the sinks are the first slots (positions ascend, and a cut keeps them all).
  const int32_t* pos = it.cache.pos + (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap);
  int sinks = 0;
  while (sinks < imin(it.kept, it.sinks) && pos[sinks] < it.sinks) ++sinks;
  h.sinks = sinks;
  h.residual = it.kept - sinks - h.quantized;
  // Whole groups while R + G or more wait, then the rest moves down once (16-bit halves alone never flush).
  const int G = h.group;
  const bool quantizes = h.key_bits < 16 || h.value_bits < 16;
  int flushed = 0;
  for (; quantizes && h.residual - flushed >= h.residual_target + G; flushed += G)
    flush_group(h, h.sinks + flushed, h.quantized + flushed, h.groups + flushed / G);
  if (flushed > 0) {
    const int first = h.sinks, rest = h.residual - flushed;
    const auto dst = [&](int r) { return first + r; };
    const auto src = [&](int r) { return first + flushed + r; };
    move_rows(h.full_k, h.hd * 2, 0, rest, dst, src);
    move_rows(h.full_v, h.hd * 2, 0, rest, dst, src);
  }
  __syncthreads();  // every thread has read the counts it started from
  if (threadIdx.x == 0) {
    h.counts[kSinks] = h.sinks;
    h.counts[kQuantized] = h.quantized + flushed;
    h.counts[kResidual] = h.residual - flushed;
    h.counts[kGroups] = h.groups + flushed / G;
  }
}

}  // namespace

void kv_flush(const ItemDesc* items, int item_count, const ModelDims& dims, int threads, gpu::Stream stream) {
  if (item_count == 0) return;
  const dim3 grid(unsigned(dims.layers * dims.kv_heads), unsigned(item_count));
  H2O_LAUNCH(grid, dim3(unsigned(H2O_FIT_BLOCK(threads, kv_flush_kernel))), stream, kv_flush_kernel)(items, dims);
  gpu::check_launch("kv_flush");
}

}  // namespace H2O_KERN_NS
