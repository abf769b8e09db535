#pragma once
// RoPE angles as the CPU computes them (core/model/rope.h): in double, a pair
// turning by pos * its frequency (ModelDims::rope_freq), then rounded to float.
#include "kernels/portable.h"
#include "kernels/vec.cuh"

namespace H2O_KERN_NS {

// FloatPtr: a float* or, for a table in shared memory, a SharedPtr<float>.
template <class FloatPtr>
__device__ __forceinline__ void rope_angle(double pos, double freq, FloatPtr c, FloatPtr s) {
  const double a = pos * freq;
  *c = float(cos(a));
  *s = float(sin(a));
}

// Rotates the pair (x0, x1) by the angle whose cos and sin are given.
__device__ __forceinline__ void rope_rotate(float x0, float x1, float c, float s, float* y0, float* y1) {
  *y0 = x0 * c - x1 * s;
  *y1 = x0 * s + x1 * c;
}

// The pairs of a piece of a key row rotated: `cos_sin` holds cos, sin of each of its pairs in turn.
template <class T, int N>
__device__ __forceinline__ Vec<T, N> rotated(const Vec<T, N>& x, const float* cos_sin) {
  static_assert(N % 2 == 0, "a piece holds whole pairs");
  Vec<T, N> y;
H2O_UNROLL
  for (int i = 0; i < N; i += 2) {
    float y0, y1;
    rope_rotate(to_f32(x.v[i]), to_f32(x.v[i + 1]), cos_sin[i], cos_sin[i + 1], &y0, &y1);
    y.v[i] = from_f32<T>(y0);
    y.v[i + 1] = from_f32<T>(y1);
  }
  return y;
}

}  // namespace H2O_KERN_NS
