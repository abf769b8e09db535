#pragma once
// RoPE angles as the CPU computes them (core/model/rope.h): in double, a pair
// turning by pos * its frequency (ModelDims::rope_freq), then rounded to float.
#include "kernels/portable.h"

namespace h2o::kern {

__device__ __forceinline__ void rope_angle(double pos, double freq, float* c, float* s) {
  const double a = pos * freq;
  *c = float(cos(a));
  *s = float(sin(a));
}

// Rotates the pair (x0, x1) by the angle whose cos and sin are given.
__device__ __forceinline__ void rope_rotate(float x0, float x1, float c, float s, float* y0, float* y1) {
  *y0 = x0 * c - x1 * s;
  *y1 = x0 * s + x1 * c;
}

}  // namespace h2o::kern
