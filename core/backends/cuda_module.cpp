#include "core/backends/cuda_module.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/executable_path.h"
#include "core/base/version.h"

namespace h2o {
namespace fs = std::filesystem;

namespace {

#ifdef H2O_CUDA_MODULE_BUILT
constexpr char kCudaMajor[] = H2O_CUDA_MAJOR;  // the CUDA runtime's major version the module links
#else
constexpr char kCudaMajor[] = "";
#endif

// What a build without the CUDA backend says to --backend cuda.
constexpr char kNotBuilt[] =
    "cuda: this build has no CUDA backend (see kernels/README.md); use --backend cpu, or cuda-sim to run its code "
    "through the emulation";

#ifdef H2O_CUDA_MODULE_BUILT
bool inside(const fs::path& path, const fs::path& folder) {
  const auto [end, _] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return !folder.empty() && end == folder.end();
}
#endif

// The module found but not loadable: mostly the CUDA libraries it links are not on this machine.
std::string load_error(const std::string& path, const std::string& why) {
  if (why.find("libcudart") != std::string::npos || why.find("libcublas") != std::string::npos)
    return "cuda: the CUDA runtime is not installed (" + why + "); install an NVIDIA driver with the CUDA " +
           kCudaMajor + " runtime and cuBLAS, or use --backend cpu";
  return "cuda: cannot load the CUDA backend (" + (why.empty() ? path : why) + "); use --backend cpu";
}

}  // namespace

std::vector<std::string> cuda_module_places() {
#ifndef H2O_CUDA_MODULE_BUILT
  return {};
#else
  std::vector<std::string> places;
  const fs::path exe = executable_dir();
  if (!exe.empty()) places.push_back((exe / H2O_MODULE_FROM_BIN / kCudaModuleFile).lexically_normal().string());
  const bool in_build_folder = inside(exe, H2O_BUILD_DIR);
  if (in_build_folder && (places.empty() || places.front() != H2O_BUILD_MODULE)) places.push_back(H2O_BUILD_MODULE);
  return places;
#endif
}

CudaModuleLoad load_cuda_module(const std::vector<std::string>& places) {
  CudaModuleLoad load;
  if (places.empty()) {
    load.error = kNotBuilt;
    return load;
  }
  load.path = places.front();
  std::error_code ec;
  const auto found =
      std::find_if(places.begin(), places.end(), [&](const std::string& p) { return fs::exists(p, ec); });
  if (found == places.end()) {
    std::string where;
    for (const std::string& p : places) where += (where.empty() ? "" : " nor ") + p;
    load.error = "cuda: the CUDA backend is not installed (no " + where + "); use --backend cpu";
    return load;
  }
  load.path = *found;
  // RTLD_NOW: a missing CUDA library fails here, in one message, not at the first call. Never
  // closed: the backends it makes, and their vtables, live in it.
  void* handle = ::dlopen(load.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    load.error = load_error(load.path, why ? why : "");
    return load;
  }
  const auto entry_function = reinterpret_cast<CudaModuleEntryFunction>(::dlsym(handle, kCudaModuleEntrySymbol));
  const CudaModuleEntry* entry = entry_function ? entry_function() : nullptr;
  if (!entry) {
    load.error = "cuda: " + load.path + " is not an H2O Studio CUDA module (no " + kCudaModuleEntrySymbol +
                 "); use --backend cpu";
    return load;
  }
  if (entry->abi != kCudaModuleAbi || !entry->version || std::strcmp(entry->version, version()) != 0) {
    load.error = "cuda: " + load.path + " is from another build of H2O Studio (" +
                 (entry->abi == kCudaModuleAbi && entry->version ? std::string(entry->version) : "older") +
                 "; this program is " + version() + "): install or build both together";
    return load;
  }
  load.entry = entry;
  return load;
}

const CudaModuleEntry& cuda_module() {
  static const CudaModuleLoad load = load_cuda_module(cuda_module_places());
  if (!load.entry) fail("--backend", load.error);
  return *load.entry;
}

}  // namespace h2o
