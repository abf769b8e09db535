#pragma once
// Block-wide reductions, scans and selection used by several kernels. All
// are deterministic: a fixed combination order (warp butterflies, then the
// warps' partials in order), integer atomics only, so the same inputs give
// the same bits on every run, as the f32 reference checks need.
#include "kernels/portable.h"

namespace H2O_KERN_NS {

struct Sum {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Min {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

template <class T, class Op>
__device__ T warp_reduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Every thread gets op over every thread's `v`. `scratch`: 32 shared slots.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T identity, SharedPtr<T> scratch) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, warps = int(blockDim.x) >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // the slots are free (a previous reduction has been read)
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  // Every warp combines the same partials the same way: all threads agree bit for bit.
  return warp_reduce(lane < warps ? scratch[lane] : identity, op);
}

// The (value, index) of the largest value, ties to the lowest index (as
// llama2.c's argmax and std::max_element); every thread gets the result.
struct ArgMax {
  float value;
  int index;
};
__device__ __forceinline__ ArgMax better(ArgMax a, ArgMax b) {
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}
__device__ __forceinline__ ArgMax warp_argmax(ArgMax a) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    ArgMax other{__shfl_xor_sync(0xffffffffu, a.value, offset), __shfl_xor_sync(0xffffffffu, a.index, offset)};
    a = better(a, other);
  }
  return a;
}
__device__ __forceinline__ ArgMax block_argmax(ArgMax a, SharedPtr<float> values, SharedPtr<int> indices) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, warps = int(blockDim.x) >> 5;
  a = warp_argmax(a);
  __syncthreads();
  if (lane == 0) values[warp] = a.value, indices[warp] = a.index;
  __syncthreads();
  ArgMax b{-INFINITY, 0x7fffffff};
  if (lane < warps) b = {values[lane], indices[lane]};
  return warp_argmax(b);
}

// Exclusive prefix sum over the threads' values in thread order; `scratch`:
// blockDim shared slots. Every thread gets its own prefix; *total the sum.
template <class T>
__device__ T block_exclusive_scan(T v, SharedPtr<T> scratch, T* total) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    T running = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) {
      const T x = scratch[t];
      scratch[t] = running;
      running += x;
    }
    scratch[blockDim.x] = running;
  }
  __syncthreads();
  const T prefix = scratch[threadIdx.x];
  *total = scratch[blockDim.x];
  __syncthreads();  // read before the slots are reused
  return prefix;
}

// The k-th largest (k >= 1) of the 64-bit keys key(j), j in [begin, end), at
// least k of them; keys may repeat. A radix select, eight bits a pass, with
// integer counts: every thread gets the key.
template <class KeyFn>
__device__ unsigned long long block_kth_largest(int begin, int end, int k, KeyFn key) {
  H2O_SHARED(int, histogram, [256]);
  H2O_SHARED(unsigned long long, chosen_prefix);
  H2O_SHARED(int, chosen_remaining);
  unsigned long long prefix = 0, mask = 0;
  int remaining = k;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = int(threadIdx.x); b < 256; b += int(blockDim.x)) histogram[b] = 0;
    __syncthreads();
    for (int j = begin + int(threadIdx.x); j < end; j += int(blockDim.x)) {
      const unsigned long long kj = key(j);
      if ((kj & mask) == prefix) atomicAdd(&histogram[(kj >> shift) & 255], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int b = 255;
      for (; b > 0; --b) {
        if (histogram[b] >= remaining) break;
        remaining -= histogram[b];
      }
      chosen_prefix = prefix | (static_cast<unsigned long long>(b) << shift);
      chosen_remaining = remaining;
    }
    __syncthreads();
    prefix = chosen_prefix;
    remaining = chosen_remaining;
    mask |= static_cast<unsigned long long>(0xff) << shift;
  }
  return prefix;
}

// The block of a kernel that gives each row one block (rmsnorm.cu, layernorm.cu):
// about four elements a thread, a whole number of warps, at most
// kMaxRowThreads, which the kernels declare to ptxas (__launch_bounds__), so
// they keep to the 64 registers a thread such a block allows. From the row
// width alone, so the sums' order depends on nothing else.
constexpr int kMaxRowThreads = 1024;
inline int row_block_threads(int dim) {
  const int threads = (dim / 4 + 31) / 32 * 32;
  return threads < 32 ? 32 : threads > kMaxRowThreads ? kMaxRowThreads : threads;
}

}  // namespace H2O_KERN_NS
