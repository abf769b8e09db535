#pragma once
// H2O_HD marks small functions that the host planning code and the kernels
// share, so that both compute an index or a count the same way.
#if defined(__CUDACC__)
#define H2O_HD __host__ __device__ inline
#else
#define H2O_HD inline
#endif
