#pragma once
// A fixed number of storage-type elements moved as one aligned piece: a
// 16-byte Vec compiles to one vector load or store (ld.global.v4), the widest
// a thread can issue, so a copy needs a quarter of the instructions of 4-byte
// ones and keeps more bytes in flight.
#include "kernels/portable.h"

namespace H2O_KERN_NS {

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  static constexpr int kCount = N;
  T v[N];
};

}  // namespace H2O_KERN_NS
