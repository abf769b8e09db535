#pragma once
// What the CUDA tests share, whichever device runs them: the backend under
// test (the real GPU in h2o_cuda_tests, the SIMT emulation in
// h2o_cuda_emu_tests), a skip where there is no device, and suite names that
// start with Cuda (CudaEmu... for the emulated run).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/policy/policy.h"
#include "core/runtime/backend.h"
#include "kernels/cuda_backend.h"

namespace h2o::test {

// Empty when a device is there; else why not (the test is then skipped).
std::string cuda_device_missing();
// True in the SIMT emulation.
bool cuda_emulated();
// The tuning tests use by default: small blocks keep the emulation fast.
CudaTuning test_tuning();
// test_tuning(), except that in the emulation every projection runs on the
// CPU matmul that stands in for cuBLAS there (CudaTuning::matvec_rows = 0),
// not on the matvec kernel. For the tests about something else (policies,
// RoPE, precision, the engine, graphs, the shared references over hundreds of
// steps): through fibers the kernel costs far more than the CPU matmul at
// these model sizes (every lane is a fiber switch at every shuffle). In the
// emulation the kernel runs in CudaEmuMatvec (alone and captured in a graph)
// and the other CudaEmuParity tests; on the GPU, in every test.
CudaTuning cpu_projection_tuning();
// `t` with native precision's exact path: block-format weights multiply f32
// inputs, each weight the CPU's value (CudaTuning::int8_activations off). For
// the tests that hold native precision to the f32 bounds.
inline CudaTuning exact_native(CudaTuning t) {
  t.int8_activations = false;
  return t;
}

// The CUDA backend under test, on whichever device this binary runs: weights
// at `precision` ("": the file's own, as in BackendOptions), KV memory
// limited to `kv_limit_bytes` (0: no limit).
inline std::unique_ptr<Backend> cuda_backend(std::shared_ptr<const Model> model, const CudaTuning& tuning,
                                             const std::string& precision = "f32", int64_t kv_limit_bytes = 0) {
  BackendOptions o;
  o.kind = "cuda";
  o.precision = precision;
  o.kv_limit_bytes = kv_limit_bytes;
  return make_cuda_backend(std::move(model), o, tuning);
}

// A policy the device suites cut often: budget 24 with 4 sinks (H2O: 8 of
// them heavy hitters), positions rolled or not, `slack` tokens of slack.
inline PolicyConfig small_policy(const std::string& kind, bool rolling, int slack = 0) {
  PolicySettings s;
  s.budget = 24;
  s.given = {{"sinks", 4}};
  if (kind == "h2o") s.given["heavy"] = 8;
  s.rolling = rolling;
  s.slack = slack;
  return make_policy(kind, s);
}

}  // namespace h2o::test

#define H2O_CUDA_CAT2(a, b) a##b
#define H2O_CUDA_CAT(a, b) H2O_CUDA_CAT2(a, b)
// CudaParity -> CudaEmuParity in the emulated run.
#define H2O_CUDA_SUITE(name) H2O_CUDA_CAT(H2O_CUDA_SUITE_PREFIX, name)

#define H2O_REQUIRE_CUDA()                                                                    \
  do {                                                                                        \
    const std::string why_missing = ::h2o::test::cuda_device_missing();                        \
    if (!why_missing.empty()) GTEST_SKIP() << "no CUDA device: " << why_missing;               \
  } while (0)

// TEST / TEST_P / INSTANTIATE_TEST_SUITE_P with the suite's name expanded
// first (gtest pastes and stringifies its arguments as written).
#define H2O_CUDA_TEST(suite, name) H2O_CUDA_TEST_EXPANDED(H2O_CUDA_SUITE(suite), name)
#define H2O_CUDA_TEST_EXPANDED(suite, name) TEST(suite, name)
#define H2O_CUDA_TEST_P(suite, name) H2O_CUDA_TEST_P_EXPANDED(H2O_CUDA_SUITE(suite), name)
#define H2O_CUDA_TEST_P_EXPANDED(suite, name) TEST_P(suite, name)
#define H2O_CUDA_INSTANTIATE(prefix, suite, ...) H2O_CUDA_INSTANTIATE_EXPANDED(prefix, H2O_CUDA_SUITE(suite), __VA_ARGS__)
#define H2O_CUDA_INSTANTIATE_EXPANDED(prefix, suite, ...) INSTANTIATE_TEST_SUITE_P(prefix, suite, __VA_ARGS__)
