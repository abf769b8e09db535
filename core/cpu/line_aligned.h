#pragma once
// Vectors whose data start on a cache line (64 bytes). The kernels read
// activation rows with 512-bit loads; from a plain std::vector (16-byte
// aligned) three of every four such loads straddle two lines, which costs
// them twice. Float32 matvecs of 3 and 4 activation rows, weights in cache
// (h2o-bench-quant --types F32 --batch 3, then 4): 47-54 and 35-38 GB/s from
// a plain vector, 68-78 and 49-55 from these; F16 at 768 x 2048 29 -> 45.
#include <cstddef>
#include <new>
#include <vector>

namespace h2o::cpu {

inline constexpr size_t kCacheLine = 64;

template <class T>
struct LineAlignedAllocator {
  using value_type = T;
  LineAlignedAllocator() = default;
  template <class U>
  LineAlignedAllocator(const LineAlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kCacheLine))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(kCacheLine)); }
  template <class U>
  bool operator==(const LineAlignedAllocator<U>&) const { return true; }
};

template <class T>
using LineAligned = std::vector<T, LineAlignedAllocator<T>>;

}  // namespace h2o::cpu
