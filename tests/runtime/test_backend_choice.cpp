// The app's backend choice: the device asked for, or the CPU with the reason
// in short when that device cannot start here; a CPU that cannot start is an
// error, as on the command line.
#include <gtest/gtest.h>

#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/model/model.h"

using namespace h2o;

namespace {
std::shared_ptr<const Model> tiny_model() { return make_synthetic({"stories260K", 7, DType::F32, 0, 0}); }
}  // namespace

TEST(BackendChoice, ADeviceThatCannotStartFallsBackToTheCpuAndSaysWhyInShort) {
  BackendOptions options;
  options.kind = "tpu";
  const BackendChoice choice = make_backend_or_cpu(tiny_model(), options);
  ASSERT_TRUE(choice.backend);
  EXPECT_EQ(choice.backend->describe().rfind("cpu", 0), 0u) << choice.backend->describe();
  EXPECT_EQ(choice.error, "--backend: unknown backend 'tpu' (expected cpu|cuda|cuda-sim)");
  EXPECT_EQ(choice.reason, "unknown backend 'tpu'");
}

TEST(BackendChoice, CudaWithoutAGpuRunsOnTheCpu) {
  BackendOptions options;
  options.kind = "cuda";
  const BackendChoice choice = make_backend_or_cpu(tiny_model(), options);
  ASSERT_TRUE(choice.backend);
  if (choice.error.empty()) GTEST_SKIP() << "a GPU is here: " << choice.backend->describe();
  EXPECT_EQ(choice.backend->describe().rfind("cpu", 0), 0u);
  EXPECT_FALSE(choice.reason.empty());
  EXPECT_NE(choice.reason.rfind("--backend", 0), 0u) << choice.reason;
  EXPECT_NE(choice.reason.rfind("cuda:", 0), 0u) << choice.reason;
  EXPECT_EQ(choice.reason.find(" ("), std::string::npos) << choice.reason;
}

TEST(BackendChoice, ACpuThatCannotStartIsAnError) {
  BackendOptions options;
  options.kind = "cpu";
  options.threads = -1;
  EXPECT_THROW(make_backend_or_cpu(tiny_model(), options), Error);
}
