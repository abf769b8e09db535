#pragma once
// --backend cuda-sim: the CUDA backend — its own host code, graphs and every
// kernel — run on the CPU through the SIMT emulation (simt.h, device_emu.cpp),
// on any machine, GPU or not. Slow (a block's threads are fibers on one CPU
// thread), for checking what the GPU would compute, not for speed.
//
// Declared in plain h2o, outside the emulation's namespaces
// (kernels/namespaces.h), so that make_backend() calls it beside the GPU
// build's make_cuda_backend() in one program.
#include <memory>

#include "core/runtime/backend.h"

namespace h2o {

// The CUDA backend of kernels/cuda_backend.h on the emulated device ("SIMT
// emulation (host memory)", 16 SMs, no memory limit), with the GPU's
// default tuning. Throws Error with one line naming the flag for what it
// cannot honour (--threads above 1: the emulation runs on one thread), and
// as make_cuda_backend() does for a precision or a model shape it refuses.
std::unique_ptr<Backend> make_cuda_sim_backend(std::shared_ptr<const Model> model, const BackendOptions& options);

}  // namespace h2o
