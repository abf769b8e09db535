#pragma once
// --backend cuda as make_backend() reaches it: the CUDA backend is a module of
// its own (h2o-cuda.so; kernels/cuda_module_entry.h), loaded with dlopen the
// first time it is asked for, so that no program links a CUDA library and each
// starts on a machine without them. Only core/backends knows it is a module.
#include <string>
#include <vector>

#include "kernels/cuda_module_entry.h"

namespace h2o {

// Where the module is looked for, in order: relative to the running program
// (../lib/<multiarch>/h2o-studio/h2o-cuda.so from bin/ when installed, from app/
// in the build folder), then the build folder's own, for a program that runs
// from elsewhere in it (the tests). Empty where this build has no CUDA backend.
std::vector<std::string> cuda_module_places();

struct CudaModuleLoad {
  const CudaModuleEntry* entry = nullptr;  // null: not loaded, and `error` says why
  std::string path;                        // the file loaded (or the first place looked in)
  std::string error;  // "cuda: ..." in one line, as --backend's error: not built, not found, cannot load, another build
};
// Loads the first of `places` that exists (dlopen, never closed: its backends
// live as long as the program) and checks its entry against this build.
CudaModuleLoad load_cuda_module(const std::vector<std::string>& places);

// The module of cuda_module_places(), loaded once a process; throws Error
// ("--backend: cuda: ...") where it is unavailable.
const CudaModuleEntry& cuda_module();

}  // namespace h2o
