// The CUDA tests' device in h2o_cuda_tests: the first GPU, or a skip.
#include "kernels/device.h"
#include "tests/cuda/cuda_test_support.h"

namespace h2o::test {

std::string cuda_device_missing() {
  static const std::string why = [] {
    try {
      gpu::open_device();
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return why;
}
bool cuda_emulated() { return false; }
CudaTuning test_tuning() { return CudaTuning{}; }
CudaTuning cpu_projection_tuning() { return test_tuning(); }

}  // namespace h2o::test
