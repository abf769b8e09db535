#pragma once
// What every kernel source includes: CUDA under nvcc, the SIMT emulation
// (kernels/simt/simt.h) when the same .cu is compiled as C++ (--backend
// cuda-sim, and CI without a GPU). Kernels keep to what both provide: blocks,
// threads, shared memory (H2O_SHARED), __syncthreads, warp shuffles, atomics,
// 16-byte uint4 loads through __ldg; no inline PTX.
//
// Shared memory: `H2O_SHARED(float, partial, [kWarps][kValues]);` is
// `__shared__ float partial[kWarps][kValues];` under nvcc (the same code), and
// in the emulation an array whose every access the race check sees
// (kernels/simt/race_check.h). A function that is handed a shared array takes
// a SharedPtr<T> (a T* under nvcc).
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
// A launch on a gpu::Stream (kernels/device.h); the kernel is the last
// argument so that a template kernel's commas need no parentheses.
#define H2O_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, reinterpret_cast<cudaStream_t>(stream)>>>
// `threads`, or fewer where the kernel's registers allow no more in one block
// (a kernel of 96+ registers cannot launch 1024 threads: 64K registers a block),
// a multiple of 32. For kernels that work at any block size and take the
// caller's; the device's answer does not change, so it is asked once.
#define H2O_FIT_BLOCK(threads, ...)                                                                 \
  ([&] {                                                                                            \
    static const int most = [] {                                                                    \
      cudaFuncAttributes a{};                                                                       \
      return cudaFuncGetAttributes(&a, __VA_ARGS__) == cudaSuccess ? a.maxThreadsPerBlock / 32 * 32 \
                                                                   : 1024;                          \
    }();                                                                                            \
    return (threads) < most ? (threads) : most;                                                     \
  }())
// Unrolls the next loop (of a constant trip count) where register arrays are indexed by its
// counter; nothing in the emulation (a C++ compiler would warn of an unknown pragma).
#define H2O_UNROLL _Pragma("unroll")
#define H2O_SHARED(T, name, ...) __shared__ T name __VA_ARGS__
#elif defined(H2O_SIMT)
#include "kernels/simt/simt.h"
#define H2O_LAUNCH(grid, block, stream, ...) ::simt::make_launch((grid), (block), (stream), #__VA_ARGS__, __VA_ARGS__)
#define H2O_FIT_BLOCK(threads, ...) (threads)  // the emulation has no register file
#define H2O_UNROLL
// One static per declaration, as a grid runs one block at a time (simt.h).
#define H2O_SHARED(T, name, ...) static ::simt::Shared<T __VA_ARGS__> name(#name, __func__)
#else
// Compiled as C++ without H2O_SIMT, a kernel would land in h2o::kern beside the GPU build's (kernels/namespaces.h).
#error "kernels compile as C++ only in the SIMT emulation (kernels/simt: H2O_SIMT)"
#endif

#include "core/model/dtype.h"
#include "kernels/hd.h"
#include "kernels/namespaces.h"

namespace H2O_KERN_NS {

// A pointer to shared memory, for the functions that are handed a shared array.
#if defined(__CUDACC__)
template <class T>
using SharedPtr = T*;
#else
template <class T>
using SharedPtr = ::simt::SharedPtr<T>;
#endif

// Storage types of weights, activations fed to the projections, and the KV cache.
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

}  // namespace H2O_KERN_NS

namespace H2O_KERN_NS {

// min/max on ints without CUDA's device overloads (absent from the emulation).
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

}  // namespace H2O_KERN_NS

// Runs the statement with `T` as the storage type of `dtype` (f32, f16, bf16;
// the quantised types never reach the device: weights are converted on upload).
#define H2O_WITH_STORAGE(dtype, T, ...)                 \
  switch (dtype) {                                      \
    case ::h2o::DType::F32: {                           \
      using T = float;                                  \
      __VA_ARGS__;                                      \
      break;                                            \
    }                                                   \
    case ::h2o::DType::F16: {                           \
      using T = __half;                                 \
      __VA_ARGS__;                                      \
      break;                                            \
    }                                                   \
    case ::h2o::DType::BF16: {                          \
      using T = __nv_bfloat16;                          \
      __VA_ARGS__;                                      \
      break;                                            \
    }                                                   \
    default:                                            \
      break;                                            \
  }
