// The CUDA backend's forward pass, enqueued on its stream (eagerly, or
// captured into a graph for decode steps: run_graphed).
//
// The pass: embed; per layer RMSNorm (LayerNorm with a bias for GPT-NeoX),
// one fused Q|K|V projection over every session's rows (+ biases), RoPE +
// append to each cache, split-K attention with the score accumulation,
// output projection + residual (one GEMM with beta = 1, + bias), the second
// norm, fused gate|up projection and SwiGLU (or up + bias and GELU), down
// projection + residual (+ bias) — the second norm before the output
// projection under GPT-NeoX's parallel residual; then the final norm of the
// rows to classify, the classifier, the next-token choice, forced-mode
// scores, captures, and the cut of every cache that is due, all on the device.
#include "kernels/cuda_backend_impl.h"

namespace H2O_CUDA_NS {
namespace cuda_impl {

void CudaBackend::cover_rope_slots(int slots) {
  if (slots <= scratch_.rope_slot_rows) return;
  const int rows = kern::next_power_of_two(slots);  // few refills as caches grow
  const int half = dims_.head_dim / 2;
  scratch_.grow(scratch_.rope_slots, size_t(rows) * half * 2 * sizeof(float));  // a new address drops the graphs
  kern::rope_slots(dims_.rope_freq, scratch_.rope_slots.as<float>(), rows, half, tuning_.threads, stream_->stream);
  scratch_.rope_slot_rows = rows;
}

// x[r] = the embedding row of tokens[r], in f32: a block format's rows
// dequantised as the CPU does, a float type's widened.
void CudaBackend::embed(const int* tokens, float* x, int rows) {
  const kern::MatrixPart& table = weights_->embedding().part[0];
  if (kern::is_block_format(table.type) && table.type != storage_)
    kern::dequantize_rows(table.type, table.data, dims_.dim, tokens, 0, rows, x, dims_.dim, tuning_.threads,
                          stream_->stream);
  else
    kern::embed(table.type, tokens, table.data, x, rows, dims_.dim, tuning_.threads, stream_->stream);
}

// After each operation, while --op-times measures: its name and the fewest bytes it must move.
void CudaBackend::mark(const char* op, int64_t bytes) {
  if (ops_) ops_->mark(op, bytes);
}

// The norm a block begins with, of rows of x (row_map: which, or null for
// the first `rows`) into the storage type: RMSNorm (Llama, Qwen2) or
// LayerNorm with its bias (GPT-NeoX). Where the product of `next` takes
// 8-bit inputs, the norm writes them as well, into Blas's set `set` (one
// launch fewer), and returns them for that product.
kern::Int8Rows CudaBackend::normalize(const float* x, const float* weight, const float* bias, void* out,
                                      const int* row_map, int rows, const kern::DeviceMatrix* next, int set) {
  const gpu::Stream s = stream_->stream;
  const kern::Int8Rows int8 = next ? blas_->int8_input(*next, storage_, rows, set) : kern::Int8Rows{};
  if (cfg_.norm == NormKind::Layer) {
    kern::layernorm(storage_, x, weight, bias, out, row_map, rows, dims_.dim, dims_.norm_eps, s, int8);
    mark("layernorm");
  } else {
    kern::rmsnorm(storage_, x, weight, out, row_map, rows, dims_.dim, dims_.norm_eps, s, int8);
    mark("rmsnorm");
  }
  return int8;
}

// x += w · in (+ bias): a projection whose output joins the residual stream
// (the GEMM's beta = 1), then its bias where the model has one (GPT-NeoX's
// attention output and down projection), added to the sum in f32.
void CudaBackend::project_into_residual(const void* in, const kern::DeviceMatrix& w, const float* bias, int rows,
                                        const char* op, const kern::Int8Rows& quantized) {
  blas_->gemm(scratch_.x.as<float>(), in, storage_, w, rows, true, quantized);
  mark(op, w.bytes());
  if (!bias) return;
  kern::bias_add(scratch_.x.as<float>(), bias, rows, dims_.dim, tuning_.threads, stream_->stream);
  mark("bias_add");
}

// One layer. Sequential (Llama): x += attn(norm1(x)), then x += ffn(norm2(x)).
// Parallel residual (GPT-NeoX): x += attn(norm1(x)) + ffn(norm2(x)), both
// norms of the same x, so the second norm runs before the attention output
// joins x. It can reuse scratch_.xb: the Q|K|V projection has read norm1's rows.
void CudaBackend::enqueue_layer(const StepArgs& a, int layer) {
  const kern::DeviceLayerWeights& w = weights_->layers()[size_t(layer)];
  const float* x = scratch_.x.as<float>();
  const kern::Int8Rows attention_in =
      normalize(x, w.attn_norm, w.attn_norm_bias, scratch_.xb.get(), nullptr, a.rows, &w.wqkv);
  const kern::Int8Rows attended = enqueue_attention(a, layer, attention_in);
  // Under the parallel residual the second norm's 8-bit rows wait for the FFN
  // while the output projection takes the attention's: Blas's second set.
  kern::Int8Rows ffn_in;
  if (cfg_.parallel_residual)
    ffn_in = normalize(x, w.ffn_norm, w.ffn_norm_bias, scratch_.xb.get(), nullptr, a.rows, &w.w13, 1);
  project_into_residual(scratch_.att.get(), w.wo, w.bo, a.rows, "gemm o", attended);
  if (!cfg_.parallel_residual)
    ffn_in = normalize(x, w.ffn_norm, w.ffn_norm_bias, scratch_.xb.get(), nullptr, a.rows, &w.w13);
  enqueue_ffn(w, a.rows, ffn_in);
}

// Attention of the normed rows in scratch_.xb: the Q|K|V projection, RoPE (after
// any q/k/v biases) and the append to each cache, split-K attention (its combine
// folded in) and its scores, the output heads into scratch_.att. Returns the output
// projection's 8-bit input where the combine wrote it too (heads of a multiple of 32
// values: no block across two).
kern::Int8Rows CudaBackend::enqueue_attention(const StepArgs& a, int layer, const kern::Int8Rows& normed) {
  const gpu::Stream s = stream_->stream;
  const kern::ModelDims& d = dims_;
  const kern::DeviceLayerWeights& w = weights_->layers()[size_t(layer)];
  const int T = a.rows;
  blas_->gemm(scratch_.qkv.as<float>(), scratch_.xb.get(), storage_, w.wqkv, T, false, normed);
  mark("gemm q|k|v", w.wqkv.bytes());
  kern::rope_append(kv_, scratch_.qkv.as<float>(), w.bqkv, a.item_desc, a.row_item, T, layer, d, s);
  mark("rope_append");
  // The combine is the attention kernels' own (each tile's last split block), and
  // writes the output projection's 8-bit rows beside the heads where it takes them.
  const kern::AttentionOutput out{
      scratch_.att.get(), storage_,
      d.head_dim % kern::kInt8BlockElems == 0 ? blas_->int8_input(w.wo, storage_, T) : kern::Int8Rows{}};
  const int plain_tiles = a.tiles - a.low_bit_tiles;
  kern::attention_partial(kv_, scratch_.qkv.as<float>(), a.item_desc, a.tile_desc, plain_tiles, a.tile_queries, layer, d,
                          a.attention, out, s);
  kern::attention_low_bit(scratch_.qkv.as<float>(), a.item_desc, a.tile_desc + plain_tiles, a.low_bit_tiles, a.tile_queries,
                          layer, d, a.attention, out, s);
  mark("attention", a.kv_bytes_per_layer);
  kern::attention_scores(a.item_desc, a.items, a.attention.key_stride, layer, d, a.attention, a.capture_slots,
                         tuning_.threads, s);
  mark("attention_scores");
  return out.int8;
}

// The feed-forward block of the normed rows in scratch_.xb, into x: SwiGLU (gate|up
// fused, silu(gate) * up) or the GELU MLP (up + b3, GELU, down + b2).
void CudaBackend::enqueue_ffn(const kern::DeviceLayerWeights& w, int rows, const kern::Int8Rows& normed) {
  const gpu::Stream s = stream_->stream;
  const bool gelu = cfg_.ffn == FfnKind::Gelu;
  blas_->gemm(scratch_.gate_up.as<float>(), scratch_.xb.get(), storage_, w.w13, rows, false, normed);
  mark(gelu ? "gemm up" : "gemm gate|up", w.w13.bytes());
  // The activation writes the down projection's 8-bit input where it takes one.
  const kern::Int8Rows int8 = blas_->int8_input(w.w2, storage_, rows);
  if (gelu) {
    kern::gelu(storage_, scratch_.gate_up.as<float>(), w.b3, scratch_.hidden.get(), rows, dims_.hidden, tuning_.threads,
               s, int8);
    mark("gelu");
  } else {
    kern::swiglu(storage_, scratch_.gate_up.as<float>(), scratch_.hidden.get(), rows, dims_.hidden, tuning_.threads, s,
                 int8);
    mark("swiglu");
  }
  project_into_residual(scratch_.hidden.get(), w.w2, w.b2, rows, "gemm down", int8);
}

// Everything a step runs on the device after its inputs are up: the layers,
// the classifier and the choice, and the cut. The same calls are captured
// into a graph for decode steps.
void CudaBackend::enqueue_pass(const StepArgs& a) {
  const gpu::Stream s = stream_->stream;
  const int T = a.rows, threads = tuning_.threads;
  const kern::ModelDims& d = dims_;
  float* x = scratch_.x.as<float>();
  embed(a.tokens, x, T);
  mark("embed");
  for (int l = 0; l < d.layers; ++l) enqueue_layer(a, l);
  if (a.classified > 0) {
    const kern::DeviceMatrix& classifier = weights_->classifier();
    const kern::Int8Rows normed = normalize(x, weights_->final_norm(), weights_->final_norm_bias(),
                                            scratch_.classify_in.get(), a.classify, a.classified, &classifier);
    blas_->gemm(scratch_.logits.as<float>(), scratch_.classify_in.get(), storage_, classifier, a.classified, false,
                normed);
    mark("gemm classifier", weights_->classifier().bytes());
    kern::sample(scratch_.logits.as<float>(), a.choose, a.items, d.vocab, scratch_.sample.as<double>(), threads, s);
    mark("sample");
  }
  kern::capture(a.item_desc, a.capture_units, a.units, d, threads, s);
  mark("capture");
  if (a.any_cut) {
    kern::evict(kv_, a.item_desc, a.items, d, a.evicted, scratch_.order.as<int>(), a.attention.key_stride, a.rope_slots,
                threads, s);
    mark("evict");
  }
  if (a.low_bit_tiles > 0) {
    kern::kv_flush(a.item_desc, a.items, d, threads, s);
    mark("kv_flush");
  }
}

// A decode step from its graph: the first step of a key runs eagerly (kernels and cuBLAS loaded
// outside a capture), the second is captured and launched, later ones replay it.
void CudaBackend::run_graphed(const StepArgs& a, const kern::GraphKey& key) {
  const gpu::Stream s = stream_->stream;
  std::optional<gpu::Graph> graph = graphs_.find(key);
  if (!graph && !graphs_.seen_before(key)) {
    enqueue_pass(a);
    return;
  }
  if (!graph) {
    gpu::begin_capture(s);
    try {
      enqueue_pass(a);
    } catch (...) {
      try {
        (void)gpu::end_capture(s);
      } catch (...) {
      }
      throw;
    }
    graph = gpu::end_capture(s);
    graphs_.insert(key, *graph);
    ++graph_captures_;
  } else {
    ++graph_replays_;
  }
  gpu::launch_graph(*graph, s);
}

// Forced mode after the pass: log Z of the classified rows, each forced
// item's rows kept in its cache (the reference for others, now or later in
// this step), then the scores against the reference rows.
void CudaBackend::enqueue_forced(const StepArgs& a, const StepIO& step) {
  const gpu::Stream s = stream_->stream;
  const int vocab = dims_.vocab;
  float* logits = scratch_.logits.as<float>();
  double* log_z = scratch_.log_z.as<double>();
  kern::row_log_z(logits, a.classified, vocab, log_z, tuning_.threads, s);
  for (size_t i = 0; i < step.items().size(); ++i) {
    CudaCache* cache = step.caches()[i];
    if (!step.items()[i].forced || cache->forced_rows() == 0) continue;
    const int first = step.plan().items[i].logit_row[0];
    const int rows = cache->forced_rows();
    gpu::copy_on_device(cache->reference_logits(), logits + size_t(first) * vocab, size_t(rows) * vocab * sizeof(float),
                        s);
    gpu::copy_on_device(cache->reference_log_z(), log_z + first, size_t(rows) * sizeof(double), s);
  }
  kern::forced_scores(logits, log_z, a.forced_rows, a.forced, vocab, tuning_.threads, s);
}

}  // namespace cuda_impl
}  // namespace H2O_CUDA_NS
