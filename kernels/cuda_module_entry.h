#pragma once
// The one entry point of the CUDA module (h2o-cuda.so, built from
// kernels/cuda_module.cpp), as core/backends loads it with dlopen
// (core/backends/cuda_module.cpp) — llama.cpp's GGML_BACKEND_DL in spirit: the
// programs link no CUDA library, and reach the CUDA backend only through this.
// It speaks the program's own C++ types (the Backend interface, std::string),
// which is sound only because program and module come from one build: the
// entry says its layout and its build's version first, and the loader uses
// nothing else of a module that differs in either.
#include <memory>
#include <vector>

#include "kernels/cuda_backend.h"
#include "kernels/namespaces.h"

namespace H2O_CUDA_NS {

// Bumped whenever CudaModuleEntry changes: `abi` stays its first member.
inline constexpr int kCudaModuleAbi = 1;

struct CudaModuleEntry {
  int abi = kCudaModuleAbi;
  const char* version = nullptr;  // h2o::version() of the module's build
  // make_cuda_backend(model, options) and the per-operation timing of kernels/cuda_backend.h.
  std::unique_ptr<Backend> (*make_backend)(std::shared_ptr<const Model> model, const BackendOptions& options) = nullptr;
  bool (*set_op_timing)(Backend& backend, bool on) = nullptr;
  std::vector<CudaOpTime> (*op_times)(const Backend& backend) = nullptr;
};

// The module exports one symbol: extern "C" const CudaModuleEntry* h2o_cuda_module_entry();
inline constexpr char kCudaModuleEntrySymbol[] = "h2o_cuda_module_entry";
using CudaModuleEntryFunction = const CudaModuleEntry* (*)();
// Its file name, in lib/<multiarch>/h2o-studio/ (kernels/CMakeLists.txt).
inline constexpr char kCudaModuleFile[] = "h2o-cuda.so";

}  // namespace H2O_CUDA_NS
