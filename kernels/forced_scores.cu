// Teacher-forced scores on the device, as core/runtime/forced_scoring.cpp
// computes them on the host, in double: log Z of each classified row, then
// per scored row its NLL of the next token and, against the reference cache's
// row of the same step (kept on the device by that cache), KL(reference ||
// row) and whether the top-1 tokens agree. Only three numbers a row cross
// to the host. Sums run in a fixed tree order rather than left to right: the
// results agree with the CPU's to ~1e-15 relative.
#include "kernels/block_reduce.cuh"
#include "kernels/launch.h"

namespace H2O_KERN_NS {
namespace {

__global__ void row_log_z_kernel(const float* logits, int vocab, double* log_z) {
  H2O_SHARED(float, max_slots, [32]);
  H2O_SHARED(double, sum_slots, [32]);
  const float* l = logits + size_t(blockIdx.x) * size_t(vocab);
  float m = -INFINITY;
  for (int i = int(threadIdx.x); i < vocab; i += int(blockDim.x)) m = fmaxf(m, l[i]);
  m = block_reduce(m, Max{}, -INFINITY, max_slots);
  double sum = 0;
  for (int i = int(threadIdx.x); i < vocab; i += int(blockDim.x)) sum += exp(double(l[i]) - double(m));
  sum = block_reduce(sum, Sum{}, 0.0, sum_slots);
  if (threadIdx.x == 0) log_z[blockIdx.x] = double(m) + log(sum);
}

__global__ void forced_scores_kernel(const float* logits, const double* log_z, const ForcedRow* rows, int vocab) {
  H2O_SHARED(double, sum_slots, [32]);
  H2O_SHARED(float, value_slots, [32]);
  H2O_SHARED(float, ref_value_slots, [32]);
  H2O_SHARED(int, index_slots, [32]);
  H2O_SHARED(int, ref_index_slots, [32]);
  const ForcedRow f = rows[blockIdx.x];
  const float* l = logits + size_t(f.logits_row) * size_t(vocab);
  const double z = log_z[f.logits_row];
  if (!f.ref_logits) {
    if (threadIdx.x == 0) f.out[0] = -(double(l[f.target]) - z);
    return;
  }
  const double ref_z = *f.ref_logz;
  double kl = 0;
  ArgMax top{-INFINITY, 0x7fffffff}, ref_top{-INFINITY, 0x7fffffff};
  for (int t = int(threadIdx.x); t < vocab; t += int(blockDim.x)) {
    const double lp = double(l[t]) - z, ref = double(f.ref_logits[t]) - ref_z;
    kl += exp(ref) * (ref - lp);
    // The largest log-probability is the largest logit (same shift), first index on ties.
    top = better(top, ArgMax{l[t], t});
    ref_top = better(ref_top, ArgMax{f.ref_logits[t], t});
  }
  kl = block_reduce(kl, Sum{}, 0.0, sum_slots);
  top = block_argmax(top, value_slots, index_slots);
  ref_top = block_argmax(ref_top, ref_value_slots, ref_index_slots);
  if (threadIdx.x == 0) {
    f.out[0] = -(double(l[f.target]) - z);
    f.out[1] = kl;
    f.out[2] = top.index == ref_top.index ? 1.0 : 0.0;
  }
}

}  // namespace

void row_log_z(const float* logits, int rows, int vocab, double* log_z, int threads, gpu::Stream stream) {
  if (rows == 0) return;
  H2O_LAUNCH(dim3(unsigned(rows)), dim3(unsigned(threads)), stream, row_log_z_kernel)(logits, vocab, log_z);
  gpu::check_launch("row_log_z");
}

void forced_scores(const float* logits, const double* log_z, const ForcedRow* rows, int row_count, int vocab,
                   int threads, gpu::Stream stream) {
  if (row_count == 0) return;
  H2O_LAUNCH(dim3(unsigned(row_count)), dim3(unsigned(threads)), stream, forced_scores_kernel)(logits, log_z, rows,
                                                                                             vocab);
  gpu::check_launch("forced_scores");
}

}  // namespace H2O_KERN_NS
