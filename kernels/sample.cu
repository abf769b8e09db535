// The next token on the device, picked exactly as choose_token()
// (core/runtime/sampler.cpp) picks it from the same logits, with the uniform
// number the host drew:
//  - greedy: the largest logit, ties to the lowest id;
//  - sampling: p = softmax(logits / T) in double; with top_p < 1 the tokens
//    sorted by p (descending, ties to the lower id) are kept until their mass
//    reaches top_p; u = uniform x kept mass; the first token (in that order,
//    or in id order when nothing is cut) whose running mass exceeds u.
// Nothing is sorted: "the first token in sorted order at which the running
// mass reaches a target" is found by a radix search over the bits of p (a
// positive double orders like its bits), eight bits a pass, with the masses
// summed as 62-bit fixed-point integers — exact and independent of the order
// of summation. The CPU sums doubles left to right; the two agree except when
// a running mass lies within ~1e-15 of the target, where float rounding, not
// the method, decides.
#include "kernels/block_reduce.cuh"
#include "kernels/launch.h"

namespace H2O_KERN_NS {
namespace {

using u64 = unsigned long long;
constexpr double kFixedOne = 4611686018427387904.0;  // 2^62

__device__ __forceinline__ u64 fixed(double p) { return u64(p * kFixedOne); }
__device__ __forceinline__ u64 bits_of(double p) { return u64(__double_as_longlong(p)); }

struct MinInt {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

struct Reached {
  int id = -1;  // -1: the whole mass stays below the target
  u64 mass = 0; // running mass up to and including `id`
};

// The first token, in choose_token's sorted order, at which the running mass
// reaches `target` (exceeds it when `strict`).
__device__ Reached first_reaching(const double* p, int vocab, u64 target, bool strict, SharedPtr<u64> scan) {
  H2O_SHARED(u64, mass, [256]);
  H2O_SHARED(u64, s_prefix);
  H2O_SHARED(u64, s_above);
  H2O_SHARED(int, s_found);
  H2O_SHARED(int, s_id);
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  u64 prefix = 0, mask = 0, above = 0;  // above: mass of the tokens before the bucket being refined
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += threads) mass[b] = 0;
    __syncthreads();
    for (int i = tid; i < vocab; i += threads) {
      const u64 bits = bits_of(p[i]);
      if ((bits & mask) == prefix) atomicAdd(&mass[(bits >> shift) & 255], fixed(p[i]));
    }
    __syncthreads();
    if (tid == 0) {
      u64 a = above;
      int b = 255, found = 0;
      for (; b >= 0; --b) {
        const u64 reach = a + mass[b];
        if (strict ? reach > target : reach >= target) {
          found = 1;
          break;
        }
        a = reach;
      }
      s_found = found;
      s_above = a;
      s_prefix = prefix | (u64(found ? b : 0) << shift);
    }
    __syncthreads();
    if (!s_found) return Reached{};
    prefix = s_prefix;
    above = s_above;
    mask |= u64(0xff) << shift;
  }
  // The tied tokens (probability bits == prefix), each worth q, in id order:
  // the answer is the j-th of them, j the fewest that reach the target.
  const u64 q = fixed(__longlong_as_double((long long)prefix));
  const u64 gap = target - above;
  const u64 j = q == 0 ? 1 : strict ? gap / q + 1 : (gap + q - 1) / q;
  const int per = (vocab + threads - 1) / threads;
  const int begin = imin(vocab, tid * per), end = imin(vocab, begin + per);
  u64 mine = 0;
  for (int i = begin; i < end; ++i) mine += bits_of(p[i]) == prefix ? 1 : 0;
  if (tid == 0) s_id = -1;
  u64 total = 0;
  const u64 before = block_exclusive_scan(mine, scan, &total);
  if (j > before && j <= before + mine) {
    u64 seen = before;
    for (int i = begin; i < end; ++i)
      if (bits_of(p[i]) == prefix && ++seen == j) {
        s_id = i;
        break;
      }
  }
  __syncthreads();
  Reached r;
  r.id = s_id;
  r.mass = above + j * q;
  __syncthreads();  // s_id read by all before a later search writes it
  return r;
}

__global__ void sample_kernel(const float* logits, const ChooseDesc* choices, int vocab, double* scratch) {
  H2O_SHARED(float, value_slots, [32]);
  H2O_SHARED(int, index_slots, [32]);
  H2O_SHARED(double, double_slots, [32]);
  H2O_SHARED(u64, u64_slots, [32]);
  H2O_SHARED(int, int_slots, [32]);
  H2O_SHARED(u64, scan, [1025]);
  const ChooseDesc c = choices[blockIdx.x];
  if (c.mode == 0) return;
  const float* l = logits + size_t(c.logits_row) * size_t(vocab);
  const int tid = int(threadIdx.x), threads = int(blockDim.x);

  if (c.mode == 1) {
    ArgMax best{-INFINITY, 0x7fffffff};
    for (int i = tid; i < vocab; i += threads) best = better(best, ArgMax{l[i], i});
    best = block_argmax(best, value_slots, index_slots);
    if (tid == 0) *c.out = best.index;
    return;
  }

  // Softmax at the temperature, in double, as choose_token computes it.
  float m = -INFINITY;
  for (int i = tid; i < vocab; i += threads) m = fmaxf(m, l[i]);
  m = block_reduce(m, Max{}, -INFINITY, value_slots);
  double* p = scratch + size_t(blockIdx.x) * size_t(vocab);
  double local = 0;
  for (int i = tid; i < vocab; i += threads) {
    const double e = exp((double(l[i]) - double(m)) / double(c.temperature));
    p[i] = e;
    local += e;
  }
  const double sum = block_reduce(local, Sum{}, 0.0, double_slots);
  u64 local_fixed = 0;
  for (int i = tid; i < vocab; i += threads) local_fixed += fixed(p[i] = p[i] / sum);
  const u64 total = block_reduce(local_fixed, Sum{}, u64(0), u64_slots);
  __syncthreads();  // every p[i] is written

  int chosen;
  if (!(c.top_p < 1.0f)) {
    // No cut: tokens in id order, each thread a contiguous range.
    const int per = (vocab + threads - 1) / threads;
    const int begin = imin(vocab, tid * per), end = imin(vocab, begin + per);
    u64 mine = 0;
    for (int i = begin; i < end; ++i) mine += fixed(p[i]);
    u64 all = 0;
    u64 running = block_exclusive_scan(mine, scan, &all);
    const u64 u = u64(c.uniform * double(total));
    int first = 0x7fffffff;
    for (int i = begin; i < end; ++i) {
      running += fixed(p[i]);
      // u = 0 is passed by the first token with any mass, however small
      // (below 2^-62 it has none in fixed point).
      if (running > u || (u == 0 && p[i] > 0)) {
        first = i;
        break;
      }
    }
    first = block_reduce(first, MinInt{}, 0x7fffffff, int_slots);
    chosen = first == 0x7fffffff ? vocab - 1 : first;
  } else {
    // The kept prefix of the sorted order (if rounding leaves the whole mass
    // below top_p, every token with mass is kept), then the draw within it.
    const u64 target = u64(double(c.top_p) * kFixedOne);
    const Reached last = first_reaching(p, vocab, target < total ? target : total, false, scan);
    const u64 u = u64(c.uniform * double(last.mass));
    const Reached pick = u < last.mass ? first_reaching(p, vocab, u, true, scan) : Reached{};
    chosen = pick.id >= 0 ? pick.id : last.id;
  }
  if (tid == 0) *c.out = chosen;
}

}  // namespace

void sample(const float* logits, const ChooseDesc* choices, int item_count, int vocab, double* scratch, int threads,
            gpu::Stream stream) {
  if (item_count == 0) return;
  H2O_LAUNCH(dim3(unsigned(item_count)), dim3(unsigned(threads)), stream, sample_kernel)(logits, choices, vocab,
                                                                                       scratch);
  gpu::check_launch("sample");
}

}  // namespace H2O_KERN_NS
