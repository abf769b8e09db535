// The CUDA tests' device in h2o_cuda_emu_tests: the SIMT emulation, always there.
#include "tests/cuda/cuda_test_support.h"
#include "kernels/simt/race_check.h"

namespace h2o::test {

namespace {
// A race the check finds in a kernel (kernels/simt/race_check.h) fails the
// running test, naming the kernel, the array and the threads, and the test
// program goes on to the next test (the check's default would abort it).
const bool g_races_fail_the_test = [] {
  simt::set_race_handler([](const simt::RaceReport& r) { ADD_FAILURE() << r.what(); });
  return true;
}();
}  // namespace

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
