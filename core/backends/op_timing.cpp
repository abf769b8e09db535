#include "core/backends/op_timing.h"

#include "core/backends/cuda_module.h"

namespace h2o {

// Only the CUDA module's backends time operations, and a "cuda" backend exists only once it loaded.
bool set_op_timing(Backend& backend, bool on) {
  return backend.name() == "cuda" && cuda_module().set_op_timing(backend, on);
}

std::vector<CudaOpTime> op_times(const Backend& backend) {
  return backend.name() == "cuda" ? cuda_module().op_times(backend) : std::vector<CudaOpTime>{};
}

}  // namespace h2o
