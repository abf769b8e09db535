#pragma once
// The namespaces of the CUDA backend's code. Its sources build twice: by
// nvcc for the GPU (h2o_kernels) and as plain C++ against the SIMT emulation
// (kernels/simt, h2o_kernels_emu; H2O_SIMT defined). One program holds both
// (`--backend cuda` and `--backend cuda-sim`), so every name the emulated
// build defines lives in an inline namespace `sim`: its symbols, inline
// functions and types never meet the GPU build's at link time, while the code
// names them the same way (h2o::kern::embed is h2o::kern::sim::embed there).
//
// Every file of the backend that is compiled into both builds (kernels,
// backend host code, device.h and the headers whose inline code calls it)
// opens these namespaces instead of plain h2o / h2o::kern / h2o::gpu;
// kernels/simt/CMakeLists.txt refuses a file that does not. The plain-C++
// host logic of h2o_kernels_host (step planning, graph keys, weight
// conversion) is compiled once and stays in h2o::kern.
#if defined(H2O_SIMT)
#define H2O_CUDA_NS h2o::inline sim
#define H2O_KERN_NS h2o::kern::inline sim
#define H2O_GPU_NS h2o::gpu::inline sim
#else
#define H2O_CUDA_NS h2o
#define H2O_KERN_NS h2o::kern
#define H2O_GPU_NS h2o::gpu
#endif
