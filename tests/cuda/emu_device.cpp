// The CUDA tests' device in h2o_cuda_emu_tests: the SIMT emulation, always there.
#include "tests/cuda/cuda_test_support.h"

namespace h2o::test {

std::string cuda_device_missing() { return ""; }
bool cuda_emulated() { return true; }
CudaTuning test_tuning() {
  CudaTuning t;
  t.threads = 32;  // one warp: a fiber switch per thread at every barrier is what the emulation pays
  return t;
}
CudaTuning cpu_projection_tuning() {
  CudaTuning t = test_tuning();
  t.matvec_rows = 0;
  return t;
}

}  // namespace h2o::test
