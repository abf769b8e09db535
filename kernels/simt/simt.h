#pragma once
// SIMT emulation: the CUDA kernels of kernels/*.cu compiled as ordinary C++
// and run on the CPU, so that CI (no GPU) runs the kernels' own code.
//
// What it models:
//  - a grid runs its blocks one after another (in the order of order.h), so
//    `__shared__` memory can be a function-local `static` (one block at a time
//    sees it): H2O_SHARED (kernels/portable.h) declares it as a checked
//    simt::Shared (shared.h) that the race check sees;
//  - a block's threads are cooperative fibers on the launching thread, each
//    with its own stack, meeting at __syncthreads() (every live thread of the
//    block) and exchanging warp shuffles through a barrier of the warp's lanes;
//    between barriers the runnable fibers take turns in the order SIMT_ORDER
//    picks (forward, reverse, a seeded shuffle: order.h), so that a result
//    that depends on the order shows; a barrier no thread can pass (a
//    __syncthreads() in divergent code) aborts with the block and the threads
//    waiting, instead of hanging;
//  - every __shared__ access is checked (race_check.h): two threads on one
//    element in one barrier interval, at least one writing and not both
//    atomically, or a read of an element the block never wrote, is reported
//    with the kernel, the array and the two threads; lanes of one warp are
//    also ordered by a warp barrier (a shuffle, __syncwarp);
//  - atomics are plain read-modify-writes: fibers only switch at barriers;
//  - __half and __nv_bfloat16 are 16-bit values converted with round to
//    nearest even (core/model/dtype.h), as cuda_fp16.h / cuda_bf16.h do.
//
// What it cannot show: timing; races on global memory other than through a
// changed result under another order (fibers switch only at barriers, so a
// missing barrier between two threads' global accesses shows only where some
// order of the turns gives a wrong answer that a test checks); and anything
// Hopper-specific. Kernels use the portable subset only (no inline PTX).
//
// Launches go through H2O_LAUNCH (kernels/portable.h): `<<<...>>>` under nvcc,
// simt::make_launch here, which hands the grid to the emulated stream
// (kernels/simt/device_emu.cpp) so that graph capture can record it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/model/dtype.h"
#include "kernels/simt/order.h"
#include "kernels/simt/shared.h"

namespace simt {

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// The built-in variables of the thread now running.
const dim3& thread_idx();
const dim3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();

void syncthreads();
void syncwarp();
// Every lane of the calling warp offers `mine` and gets lane `src_lane`'s offer.
uint64_t warp_exchange(uint64_t mine, int src_lane);
int lane_id();

// Runs every block of `grid` (in the current order: x fastest when forward),
// each block's threads as fibers. `name` is the kernel's, for reports.
void run_grid(dim3 grid, dim3 block, const char* name, const std::function<void()>& kernel);

// Runs `work` on the emulated stream now, or records it while the stream is
// being captured into a graph (kernels/simt/device_emu.cpp).
void enqueue(void* stream, std::function<void()> work);

template <class... Params>
class Launch {
 public:
  Launch(dim3 grid, dim3 block, void* stream, const char* name, void (*kernel)(Params...))
      : grid_(grid), block_(block), stream_(stream), name_(name), kernel_(kernel) {}
  template <class... Args>
  void operator()(Args&&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params), "kernel launched with the wrong number of arguments");
    // Arguments are copied at launch, as CUDA copies kernel parameters.
    auto bound = [kernel = kernel_, params = std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)]() {
      std::apply(kernel, params);
    };
    enqueue(stream_, [grid = grid_, block = block_, name = name_, bound]() { run_grid(grid, block, name, bound); });
  }

 private:
  dim3 grid_, block_;
  void* stream_;
  const char* name_;
  void (*kernel_)(Params...);
};

template <class... Params>
Launch<Params...> make_launch(dim3 grid, dim3 block, void* stream, const char* name, void (*kernel)(Params...)) {
  return Launch<Params...>(grid, block, stream, name, kernel);
}

template <class T>
T shuffle(T value, int src_lane) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  const uint64_t got = warp_exchange(bits, src_lane);
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}

template <class To, class From>
To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

}  // namespace simt

using dim3 = simt::dim3;

// ---- qualifiers and built-in variables ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
// Shared memory is declared with H2O_SHARED (kernels/portable.h), whose
// accesses the race check sees; a plain __shared__ would escape it.
#define __shared__ static_assert(false, "declare shared memory with H2O_SHARED (kernels/portable.h)");
#define __launch_bounds__(...)
#define threadIdx (::simt::thread_idx())
#define blockIdx (::simt::block_idx())
#define blockDim (::simt::block_dim())
#define gridDim (::simt::grid_dim())
#define warpSize 32

// ---- barriers, shuffles, fences ----
inline void __syncthreads() { ::simt::syncthreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ::simt::syncwarp(); }
inline void __threadfence() {}
inline void __threadfence_block() {}

template <class T>
T __shfl_sync(unsigned, T value, int src_lane, int = 32) {
  return ::simt::shuffle(value, src_lane & 31);
}
template <class T>
T __shfl_xor_sync(unsigned, T value, int lane_mask, int = 32) {
  return ::simt::shuffle(value, ::simt::lane_id() ^ lane_mask);
}
template <class T>
T __shfl_down_sync(unsigned, T value, unsigned delta, int = 32) {
  const int src = ::simt::lane_id() + int(delta);
  const T other = ::simt::shuffle(value, src < 32 ? src : ::simt::lane_id());
  return other;
}
template <class T>
T __shfl_up_sync(unsigned, T value, unsigned delta, int = 32) {
  const int src = ::simt::lane_id() - int(delta);
  return ::simt::shuffle(value, src >= 0 ? src : ::simt::lane_id());
}

// ---- atomics: fibers switch only at barriers, so a read-modify-write is atomic ----
template <class T>
T atomicAdd(T* address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}
template <class T>
T atomicMax(T* address, T value) {
  const T old = *address;
  *address = old < value ? value : old;
  return old;
}
template <class T>
T atomicMin(T* address, T value) {
  const T old = *address;
  *address = value < old ? value : old;
  return old;
}
template <class T>
T atomicExch(T* address, T value) {
  const T old = *address;
  *address = value;
  return old;
}
template <class T>
T atomicCAS(T* address, T compare, T value) {
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}
// The same on shared memory, recorded as atomic by the race check.
#define SIMT_SHARED_ATOMIC(name)                                               \
  template <class T>                                                           \
  T name(::simt::SharedPtr<T> address, T value) {                              \
    ::simt::note_shared(*address.var(), address.raw(), ::simt::Access::Atomic); \
    return name(address.raw(), value);                                         \
  }
SIMT_SHARED_ATOMIC(atomicAdd)
SIMT_SHARED_ATOMIC(atomicMax)
SIMT_SHARED_ATOMIC(atomicMin)
SIMT_SHARED_ATOMIC(atomicExch)
#undef SIMT_SHARED_ATOMIC
template <class T>
T atomicCAS(::simt::SharedPtr<T> address, T compare, T value) {
  ::simt::note_shared(*address.var(), address.raw(), ::simt::Access::Atomic);
  return atomicCAS(address.raw(), compare, value);
}

// ---- math and bit casts that CUDA has and the C++ library does not ----
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline unsigned __float_as_uint(float x) { return simt::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return simt::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return simt::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return simt::bit_cast<double>(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
// dp4a: the four byte lanes of a and b multiplied lane by lane and summed
// into c, as the hardware does it: bytes signed in the int form, unsigned in
// the unsigned one, the sum wrapping at 32 bits (no saturation).
inline int __dp4a(int a, int b, int c) {
  uint32_t sum = uint32_t(c);
  for (int lane = 0; lane < 4; ++lane)
    sum += uint32_t(int32_t(int8_t(uint32_t(a) >> (8 * lane))) * int32_t(int8_t(uint32_t(b) >> (8 * lane))));
  return int(sum);
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  uint32_t sum = c;
  for (int lane = 0; lane < 4; ++lane) sum += ((a >> (8 * lane)) & 0xFFu) * ((b >> (8 * lane)) & 0xFFu);
  return sum;
}
// Read through memcpy: kernels load a 16-byte uint4 from rows of halves or
// floats. A misaligned address faults on the GPU, so it aborts here too.
template <class T>
T __ldg(const T* p) {
  if (reinterpret_cast<uintptr_t>(p) % alignof(T) != 0) {
    std::fprintf(stderr, "simt: __ldg of a misaligned address (%zu-byte alignment)\n", alignof(T));
    std::abort();
  }
  T out;
  std::memcpy(&out, p, sizeof(T));
  return out;
}

// An L2-only load on the GPU (what another block of the launch wrote, after
// its fence and an atomic; attention_combine.cuh): one address space here.
template <class T>
T __ldcg(const T* p) {
  return *p;
}

// ---- vector types (the 16-byte loads of attention_partial) ----
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
struct alignas(8) uint2 {
  unsigned x, y;
};

// ---- 16-bit floats (round to nearest even, as cuda_fp16.h and cuda_bf16.h) ----
struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};
inline __half __float2half(float x) { return {h2o::f32_to_f16(x)}; }
inline __half __float2half_rn(float x) { return {h2o::f32_to_f16(x)}; }
inline float __half2float(__half x) { return h2o::f16_to_f32(x.bits); }
inline __half __ushort_as_half(unsigned short bits) { return {bits}; }
inline unsigned short __half_as_ushort(__half x) { return x.bits; }
inline __nv_bfloat16 __float2bfloat16(float x) { return {h2o::f32_to_bf16(x)}; }
inline __nv_bfloat16 __float2bfloat16_rn(float x) { return {h2o::f32_to_bf16(x)}; }
inline float __bfloat162float(__nv_bfloat16 x) { return h2o::bf16_to_f32(x.bits); }
