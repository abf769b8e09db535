// The CUDA module's entry point (cuda_module_entry.h): the CUDA backend of
// cuda_backend.h, handed to the program that loads this module.
#include "core/base/version.h"
#include "kernels/cuda_backend.h"
#include "kernels/cuda_module_entry.h"

namespace {

std::unique_ptr<h2o::Backend> make_backend(std::shared_ptr<const h2o::Model> model,
                                           const h2o::BackendOptions& options) {
  return h2o::make_cuda_backend(std::move(model), options);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const h2o::CudaModuleEntry* h2o_cuda_module_entry() {
  static const h2o::CudaModuleEntry entry{h2o::kCudaModuleAbi, h2o::version(), &make_backend, &h2o::cuda_set_op_timing,
                                          &h2o::cuda_op_times};
  return &entry;
}
