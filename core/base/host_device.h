#pragma once
// H2O_HD marks small functions that host code and CUDA kernels share (index
// arithmetic, the GGUF block decoding of core/model/quant_blocks.h), so both
// compute a count or a value the same way. Under nvcc they compile for both
// sides; everywhere else (the CPU build, the SIMT emulation) they are plain
// inline functions. core/ defines it so that core/ needs nothing of kernels/.
#if defined(__CUDACC__)
#define H2O_HD __host__ __device__ inline
#else
#define H2O_HD inline
#endif
