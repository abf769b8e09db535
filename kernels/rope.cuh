#pragma once
// RoPE angles as the CPU computes them (core/model/rope.h): in double, pair i
// turning by pos * theta^(-2i/head_dim), then rounded to float.
#include "kernels/portable.h"

namespace h2o::kern {

__device__ __forceinline__ void rope_angle(double pos, int pair, int head_dim, float theta, float* c, float* s) {
  const double freq = pow(double(theta), -2.0 * pair / head_dim);
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
