// The CUDA backend as a module (core/backends/cuda_module.h): where it is
// missing, cannot load or is not this build's, one line says so, and the CPU
// still runs; where it is there, it loads and makes the backend (on a machine
// without a GPU, the device's own one-line refusal).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <fstream>

#include "core/backends/cuda_module.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/version.h"
#include "core/model/model.h"
#include "tests/assets.h"

using namespace h2o;

namespace {

std::shared_ptr<const Model> tiny_model() { return make_synthetic({"stories260K", 7, DType::F32, 0, 0}); }

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }

}  // namespace

TEST(CudaModule, NoPlacesIsABuildWithoutTheCudaBackend) {
  const CudaModuleLoad load = load_cuda_module({});
  EXPECT_EQ(load.entry, nullptr);
  EXPECT_EQ(load.error.rfind("cuda: this build has no CUDA backend", 0), 0u) << load.error;
}

TEST(CudaModule, AMissingModuleSaysWhereItLookedInOneLine) {
  const CudaModuleLoad load = load_cuda_module({"/nonexistent/lib/h2o-cuda.so", "/nowhere/h2o-cuda.so"});
  EXPECT_EQ(load.entry, nullptr);
  EXPECT_EQ(load.error, "cuda: the CUDA backend is not installed (no /nonexistent/lib/h2o-cuda.so nor "
                        "/nowhere/h2o-cuda.so); use --backend cpu");
}

TEST(CudaModule, AFileThatIsNoLibraryCannotLoadAndSaysWhy) {
  const auto dir = test::temp_dir("cuda-module");
  const std::string path = (dir / "h2o-cuda.so").string();
  std::ofstream(path) << "not a shared library\n";
  const CudaModuleLoad load = load_cuda_module({"/nonexistent/h2o-cuda.so", path});
  EXPECT_EQ(load.entry, nullptr);
  EXPECT_EQ(load.path, path);  // the second place, the first that exists
  EXPECT_EQ(load.error.rfind("cuda: cannot load the CUDA backend (" + path, 0), 0u) << load.error;
  EXPECT_TRUE(one_line(load.error)) << load.error;
  std::filesystem::remove_all(dir);
}

TEST(CudaModule, ALibraryWithoutTheEntryIsNotTakenForTheModule) {
  // A function no sanitizer intercepts, so its address is in libc itself: clang links
  // AddressSanitizer into the program, where printf's address would name the program.
  Dl_info libc{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&::gnu_get_libc_version), &libc), 0);
  const CudaModuleLoad load = load_cuda_module({libc.dli_fname});
  EXPECT_EQ(load.entry, nullptr);
  EXPECT_EQ(load.error, std::string("cuda: ") + libc.dli_fname +
                            " is not an H2O Studio CUDA module (no h2o_cuda_module_entry); use --backend cpu");
}

TEST(CudaModule, ThisBuildsModuleLoadsAndMakesTheBackendOrSaysWhyNot) {
  const std::vector<std::string> places = cuda_module_places();
  if (places.empty()) GTEST_SKIP() << "this build has no CUDA backend";
  const CudaModuleLoad load = load_cuda_module(places);
  if (!load.entry) {
    // Built, but the CUDA runtime is not on this machine: the one line says that.
    EXPECT_NE(load.error.find("the CUDA runtime is not installed"), std::string::npos) << load.error;
    GTEST_SKIP() << load.error;
  }
  EXPECT_STREQ(load.entry->version, version());
  BackendOptions options;
  options.kind = "cuda";
  try {
    const auto backend = load.entry->make_backend(tiny_model(), options);
    EXPECT_EQ(backend->name(), "cuda");  // a GPU is here
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--backend: cuda: ", 0), 0u) << e.what();
    EXPECT_TRUE(one_line(e.what())) << e.what();
  }
}

TEST(CudaModule, WithoutTheCudaBackendTheCpuStillRuns) {
  BackendOptions options;
  options.kind = "cuda";
  const BackendChoice choice = make_backend_or_cpu(tiny_model(), options);
  ASSERT_TRUE(choice.backend);
  if (choice.error.empty()) GTEST_SKIP() << "the CUDA backend runs here: " << choice.backend->describe();
  EXPECT_EQ(choice.backend->name(), "cpu");
  EXPECT_TRUE(one_line(choice.error)) << choice.error;
  const int next = feed_one(*choice.backend, *choice.backend->new_cache(PolicyConfig::named("full")), 1, TokenChoice{});
  EXPECT_GE(next, 0);
}
