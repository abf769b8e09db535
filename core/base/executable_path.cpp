#include "core/base/executable_path.h"

namespace h2o {

std::filesystem::path executable_path() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe;
}

std::filesystem::path executable_dir() { return executable_path().parent_path(); }

}  // namespace h2o
