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

// The packed code rows of `tokens` f16 rows of hd channels: channel c of
// token t under scale_of(t, c), a thread a byte.
template <class ScaleOf>
__device__ void pack_codes(const uint16_t* rows, int tokens, int hd, int bits, ScaleOf scale_of, uint8_t* packed) {
  const int row_bytes = kvq::row_bytes(hd, bits);
  for (int e = int(threadIdx.x); e < tokens * row_bytes; e += int(blockDim.x)) {
    const int t = e / row_bytes, j = e % row_bytes;
    const auto code = [&](int c) {
      return DeviceMath::code_of(half_bits_to_f32(rows[size_t(t) * hd + c]), scale_of(t, c), bits);
    };
    packed[size_t(t) * row_bytes + j] = kvq::packed_byte(j, hd, bits, code);
  }
}

// Group `id` from the f16 rows at `rows` (G tokens): per channel c its (m, s)
// into key_scales, then each token's packed codes.
__device__ void quantize_keys(const LowBitView& h, const uint16_t* rows, int id, uint8_t* packed) {
  const int tid = int(threadIdx.x), threads = int(blockDim.x), G = h.shape.group, hd = h.shape.hd;
  const int bits = h.shape.key_bits;
  uint32_t* scales = h.key_scales + size_t(id) * hd;
  for (int c = tid; c < hd; c += threads) {
    const auto value = [&](int t) { return half_bits_to_f32(rows[size_t(t) * hd + c]); };
    scales[c] = kvq::scale_word(DeviceMath::scale_of_range(G, value, bits));
  }
  __syncthreads();
  pack_codes(rows, G, hd, bits, [&](int, int c) { return kvq::scale_from_word(scales[c]); }, packed);
}

// G values from the f16 rows at `rows`: per token and run of G channels its
// (m, s) into `scales` (runs a token), then the token's packed codes.
__device__ void quantize_values(const LowBitView& h, const uint16_t* rows, uint32_t* scales, uint8_t* packed) {
  const int tid = int(threadIdx.x), threads = int(blockDim.x), G = h.shape.group, hd = h.shape.hd;
  const int bits = h.shape.value_bits, runs = h.shape.value_runs();
  for (int e = tid; e < G * runs; e += threads) {
    const int t = e / runs, run = e % runs;
    const uint16_t* x = rows + size_t(t) * hd + size_t(run) * G;
    const auto value = [&](int c) { return half_bits_to_f32(x[c]); };
    scales[size_t(t) * runs + run] = kvq::scale_word(DeviceMath::scale_of_range(G, value, bits));
  }
  __syncthreads();
  const auto scale_of = [&](int t, int c) { return kvq::scale_from_word(scales[size_t(t) * runs + c / G]); };
  pack_codes(rows, G, hd, bits, scale_of, packed);
}

// A half kept at 16 bits in the quantized run: its f16 rows copied as they are.
__device__ void copy_f16_rows(const uint16_t* rows, int count, int hd, uint8_t* out) {
  uint16_t* to = reinterpret_cast<uint16_t*>(out);
  for (int e = int(threadIdx.x); e < count * hd; e += int(blockDim.x)) to[e] = rows[e];
}

// The G f16 rows from full row `from` on become key group `id` at quantized row `row`.
__device__ void flush_group(const LowBitView& h, int from, int row, int id) {
  const kvq::Shape& sh = h.shape;
  const uint16_t* keys = h.full_k + size_t(from) * sh.hd;
  const uint16_t* values = h.full_v + size_t(from) * sh.hd;
  uint8_t* packed_k = h.quant_k + size_t(row) * sh.key_row_bytes();
  uint8_t* packed_v = h.quant_v + size_t(row) * sh.value_row_bytes();
  if (kvq::coded(sh.key_bits))
    quantize_keys(h, keys, id, packed_k);
  else
    copy_f16_rows(keys, sh.group, sh.hd, packed_k);
  if (kvq::coded(sh.value_bits))
    quantize_values(h, values, h.value_scales + size_t(row) * sh.value_runs(), packed_v);
  else
    copy_f16_rows(values, sh.group, sh.hd, packed_v);
  for (int t = int(threadIdx.x); t < sh.group; t += int(blockDim.x)) h.group_of[row + t] = id;
  __syncthreads();  // the rows are read before the residual moves over them
}

__global__ void kv_flush_kernel(const ItemDesc* items, ModelDims d) {
  const ItemDesc& it = items[blockIdx.y];
  if (!it.cache.low.used()) return;  // the grid covers every item, so one graph serves any mix
  const int layer = int(blockIdx.x) / d.kv_heads, g = int(blockIdx.x) % d.kv_heads;
  LowBitView h = low_bit_view(it.cache, layer, g, d.kv_heads);
  // This step's rows: the sinks are the first slots (positions ascend, and a cut keeps them all).
  const int32_t* pos = it.cache.pos + (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap);
  kvq::Runs& r = h.runs;
  r.sinks = 0;
  while (r.sinks < imin(it.kept, it.sinks) && pos[r.sinks] < it.sinks) ++r.sinks;
  r.residual = it.kept - r.sinks - r.quantized;
  // Whole groups while the rule lets them go, then the rest moves down once.
  const int G = h.shape.group, flushed = h.shape.groups_to_flush(r.residual);
  for (int f = 0; f < flushed; ++f) flush_group(h, r.sinks + f * G, r.quantized + f * G, r.groups + f);
  if (flushed > 0) {
    const int first = r.sinks, gone = flushed * G, rest = r.residual - gone;
    const auto dst = [&](int i) { return first + i; };
    const auto src = [&](int i) { return first + gone + i; };
    move_rows(h.full_k, h.shape.hd * 2, 0, rest, dst, src);
    move_rows(h.full_v, h.shape.hd * 2, 0, rest, dst, src);
  }
  __syncthreads();  // every thread has read the counts it started from
  if (threadIdx.x == 0) store_runs(h.shape.after_flush(r, flushed), h.counts);
}

}  // namespace

void kv_flush(const ItemDesc* items, int item_count, const ModelDims& dims, int threads, gpu::Stream stream) {
  if (item_count == 0) return;
  const dim3 grid(unsigned(dims.layers * dims.kv_heads), unsigned(item_count));
  H2O_LAUNCH(grid, dim3(unsigned(H2O_FIT_BLOCK(threads, kv_flush_kernel))), stream, kv_flush_kernel)(items, dims);
  gpu::check_launch("kv_flush");
}

}  // namespace H2O_KERN_NS
