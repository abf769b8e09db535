// Score accumulation: one thread per cached key of one (item, KV head) adds
// the normalised probability p = exp(logit - M) / Z of every query head of
// the group and every row its ScoreRule counts (core/policy/score_rule.h) to
// the part of the old score the rule carries — in the CPU backend's order
// (head, then row), so that equal probabilities give equal sums. Where a
// capture asks, the same probabilities are written in full (zero where a row
// does not see the key) for capture.cu to trim.
#include "kernels/launch.h"
#include "kernels/portable.h"

namespace H2O_KERN_NS {
namespace {

__global__ void attention_scores_kernel(const ItemDesc* items, int layer, ModelDims d, const float* logits,
                                        int key_stride, const float* stats, const CaptureSlot* captures) {
  const ItemDesc& it = items[blockIdx.z];
  const int g = int(blockIdx.y);
  const int keys = it.n_before + it.rows;
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= keys) return;
  float* score = it.cache.score + (size_t(layer) * d.kv_heads + g) * size_t(it.cache.cap);
  CaptureSlot capture;
  if (captures) capture = captures[size_t(blockIdx.z) * d.layers + layer];
  const int first_captured = it.rows - capture.rows;
  float acc = it.score.carried(score[j]);
  for (int h = 0; h < d.group; ++h) {
    const size_t head = size_t(g * d.group + h);
    for (int r = 0; r < it.rows; ++r) {
      const size_t row = size_t(it.first_row + r);
      const bool visible = j < it.n_before + r + 1;
      float p = 0.0f;
      if (visible) {
        const float m = stats[(row * d.heads + head) * 2], inv = stats[(row * d.heads + head) * 2 + 1];
        p = expf(logits[(row * d.heads + head) * size_t(key_stride) + size_t(j)] - m) * inv;
        if (it.score.row_adds(r, it.rows)) acc += p;
      }
      if (capture.probs && r >= first_captured)
        capture.probs[(size_t(r - first_captured) * d.heads + head) * size_t(keys) + size_t(j)] = p;
    }
  }
  score[j] = acc;
}

}  // namespace

void attention_scores(const ItemDesc* items, int item_count, int max_keys, int layer, const ModelDims& dims,
                      const AttentionScratch& s, const CaptureSlot* captures, int threads, gpu::Stream stream) {
  const dim3 grid(unsigned((max_keys + threads - 1) / threads), unsigned(dims.kv_heads), unsigned(item_count));
  H2O_LAUNCH(grid, dim3(unsigned(threads)), stream, attention_scores_kernel)(items, layer, dims, s.logits,
                                                                           s.key_stride, s.stats, captures);
  gpu::check_launch("attention_scores");
}

}  // namespace H2O_KERN_NS
