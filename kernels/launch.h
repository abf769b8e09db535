#pragma once
// The kernels as the host calls them: one function per operation, each
// defined in its own .cu (compiled by nvcc for the GPU, and as C++ against
// the SIMT emulation for CI). `dtype` is the storage type of weights,
// projection inputs and the KV cache; `threads` the block size (a multiple
// of 32). Every function enqueues on `stream` and returns at once.
#include <cstdint>

#include "core/model/dtype.h"
#include "kernels/device.h"
#include "kernels/int8_activations.h"
#include "kernels/step_desc.h"

namespace H2O_KERN_NS {

// x[r] = table[tokens[r]] widened to f32 (embedding.cu).
void embed(DType dtype, const int* tokens, const void* table, float* x, int rows, int dim, int threads,
           gpu::Stream stream);

// out[r] = x[row_map ? row_map[r] : r] / rms * weight, in the storage type (rmsnorm.cu); a block
// sized to the row. With `int8` (in != 0; storage f32), out's rows in 8 bits there too, as
// quantize_int8 writes them.
void rmsnorm(DType dtype, const float* x, const float* weight, void* out, const int* row_map, int rows, int dim,
             float eps, gpu::Stream stream, const Int8Rows& int8 = {});
// out[r] = (x[row_map ? row_map[r] : r] - mean) / sqrt(var + eps) * weight + bias, in the storage
// type: GPT-NeoX's LayerNorm (layernorm.cu); a block sized to the row, and `int8`, as rmsnorm.
void layernorm(DType dtype, const float* x, const float* weight, const float* bias, void* out, const int* row_map,
               int rows, int dim, float eps, gpu::Stream stream, const Int8Rows& int8 = {});

// rows[r][c] += bias[c], f32 rows of `width` (bias_add.cu).
void bias_add(float* rows, const float* bias, int row_count, int width, int threads, gpu::Stream stream);

// RoPE on each row's queries (in place) and keys; keys, values, positions
// and zero scores appended to each item's cache at its next slot; `bias`
// (q_dim + 2 kv_dim, or null) added to each value first (rope_append.cu).
void rope_append(DType dtype, float* qkv, const float* bias, const ItemDesc* items, const int* row_item, int rows,
                 int layer, const ModelDims& dims, gpu::Stream stream);

// The attention scratch of one step, and how its keys are split.
struct AttentionScratch {
  float* logits = nullptr;    // [row][head][key_stride] scaled q·k of the visible keys
  int key_stride = 0;
  float* partials = nullptr;  // [row][head][split_bucket][head_dim + 2]: unnormalised output, max, sum
  int split_bucket = 0;       // split blocks in the grid
  float* stats = nullptr;     // [row][head][2]: max and 1/sum of the softmax
  int split_keys = 0;         // keys per split: split s holds slots [s * split_keys, (s + 1) * split_keys)
  int* arrivals = nullptr;    // [row][kv_head], at a tile's first row: its splits done; zero between launches
};

// Where the attention writes its output: the heads in `type` (the output
// projection's input, [row][q_dim]), and with int8.in != 0 (f32 heads,
// head_dim a multiple of 32) their 8-bit rows too, as quantize_int8 writes them.
struct AttentionOutput {
  void* heads = nullptr;
  DType type = DType::F32;
  Int8Rows int8;
};

// Split-K attention over each item's cache (attention_partial.cu): each
// (split, KV head, query tile) block writes its partial output and the raw
// logits, and a tile's last split block to finish combines the tile's splits
// into `out` and the softmax's max and 1/sum (attention_combine.cuh). Its
// block size is its own (kAttentionWarps warps); `tile_queries` is the most
// queries (rows x group) of any tile.
void attention_partial(DType dtype, const float* qkv, const ItemDesc* items, const RowTile* tiles, int tile_count,
                       int tile_queries, int layer, const ModelDims& dims, const AttentionScratch& scratch,
                       const AttentionOutput& out, gpu::Stream stream);
// The same over quantized caches (step_desc.h's LowBitArrays): sinks and
// residual read as f16 rows, the quantized run straight from its codes
// (attention_low_bit.cu). `tiles` are the quantized items' tiles alone.
void attention_low_bit(const float* qkv, const ItemDesc* items, const RowTile* tiles, int tile_count, int tile_queries,
                       int layer, const ModelDims& dims, const AttentionScratch& scratch, const AttentionOutput& out,
                       gpu::Stream stream);
// The normalised probabilities added into each key's score, summed over the
// query group and rows (the last row alone, reset first, for current scores),
// and written in full where a capture asks (attention_scores.cu).
void attention_scores(const ItemDesc* items, int item_count, int max_keys, int layer, const ModelDims& dims,
                      const AttentionScratch& scratch, const CaptureSlot* captures, int threads, gpu::Stream stream);

// Rows up to which Blas::gemm multiplies with matvec rather than cuBLAS (blas.h).
constexpr int kMatvecMaxRows = 8;

// out[r][o] (f32) = sum_i w[o][i] x[r][i] for r < rows <= kMatvecMaxRows,
// plus out[r][o] itself when `accumulate`; w row-major [out_features, in], x
// row-major [rows, in], both of `dtype` (f32 sums). Streams each weight once
// for all rows; fixed block size, no scratch (matvec.cu).
void matvec(DType dtype, float* out, const void* x, const void* w, int rows, int in, int out_features,
            bool accumulate, gpu::Stream stream);

// The same product with the weights in a block format (quant_formats.cuh:
// Q8_0, Q4_0, Q4_K, Q5_K, Q6_K as GGUF stores them, or f16), rows
// row_bytes(type, in) apart, and x f32: out[r * out_stride + o], each weight
// dequantised in registers to the CPU's value, f32 sums (matvec_quant.cu).
// x and w start on 16 bytes and `in` is a multiple of 16.
void matvec_quant(DType type, float* out, int out_stride, const float* x, const void* w, int rows, int in,
                  int out_features, bool accumulate, gpu::Stream stream);
// x [rows, in] (f32, in a multiple of 32) in 8 bits: each block of 32 to its
// codes and Int8Block (int8_activations.h), one thread a block (quantize_int8.cu).
void quantize_int8(const float* x, int rows, int in, const Int8Rows& out, gpu::Stream stream);
// The product of matvec_quant with x in 8 bits (quantize_int8): integer dot
// products of the weights' codes and x's, the scales applied once per 16 or
// 32 elements (matvec_quant.cu). Not exact: x's codes err by up to d / 2.
// Q8_0, Q4_0, Q4_K, Q5_K and Q6_K (has_int8_path); w as for matvec_quant.
void matvec_int8(DType type, float* out, int out_stride, const Int8Rows& x, const void* w, int rows,
                 int out_features, bool accumulate, gpu::Stream stream);
// out[r * out_stride + c] = element c of row (ids ? ids[r] : first + r) of
// `w`, a block-format matrix of `cols` columns, as the CPU dequantises it
// (dequantize.cu): embedding rows and the slabs products of many rows multiply.
void dequantize_rows(DType type, const void* w, int cols, const int* ids, int first, int rows, float* out,
                     int out_stride, int threads, gpu::Stream stream);

// out = silu(gate) * up from the fused [gate | up] projection rows (swiglu.cu); with `int8`
// (in != 0; storage f32), out's rows in 8 bits there too, as quantize_int8 writes them.
void swiglu(DType dtype, const float* gate_up, void* out, int rows, int hidden, int threads, gpu::Stream stream,
            const Int8Rows& int8 = {});
// out = gelu(up + bias) (exact erf GELU) from the up projection's rows of `hidden`; `bias` may be
// null; `int8` as swiglu (gelu.cu).
void gelu(DType dtype, const float* up, const float* bias, void* out, int rows, int hidden, int threads,
          gpu::Stream stream, const Int8Rows& int8 = {});

// Cuts every (layer, KV head) of the items whose `cut` is set, by their rule:
// top-k by score among the middle slots, stable compaction from the first
// evicted slot, re-rotation under rolling positions; evicted positions to
// `evicted` (evict.cu). `order` is scratch of item_count x layers x kv_heads
// x order_stride ints, order_stride >= any item's keys. `rope_slots`: the
// table rope_slots() fills, at least as many slots as any rolling item keeps
// (null when no item rolls).
void evict(DType dtype, const ItemDesc* items, int item_count, const ModelDims& dims, int32_t* evicted, int* order,
           int order_stride, const float* rope_slots, int threads, gpu::Stream stream);
// After the cut, every (layer, KV head) of each quantized item: its counts
// take in the step's rows, and its residual's oldest whole groups of G are
// quantized while R + G or more wait (kv_flush.cu).
void kv_flush(const ItemDesc* items, int item_count, const ModelDims& dims, int threads, gpu::Stream stream);
// table[slot][pair] = {cos, sin} of slot * freq[pair], for slots < rows and
// pairs < half (rope_slots.cu).
void rope_slots(const double* freq, float* table, int rows, int half, int threads, gpu::Stream stream);

// The next token of each item from its logits row (sample.cu); `scratch`:
// items x vocab doubles for the sampled ones.
void sample(const float* logits, const ChooseDesc* choices, int item_count, int vocab, double* scratch, int threads,
            gpu::Stream stream);

// log of the softmax normaliser of each logits row, in double (forced_scores.cu).
void row_log_z(const float* logits, int rows, int vocab, double* log_z, int threads, gpu::Stream stream);
// Teacher-forced NLL, KL(reference || row) and top-1 agreement of each row (forced_scores.cu).
void forced_scores(const float* logits, const double* log_z, const ForcedRow* rows, int row_count, int vocab,
                   int threads, gpu::Stream stream);

// Trims captured attention and measures top-k shares (capture.cu).
void capture(const ItemDesc* items, const CaptureUnit* units, int unit_count, const ModelDims& dims, int threads,
             gpu::Stream stream);

}  // namespace H2O_KERN_NS
