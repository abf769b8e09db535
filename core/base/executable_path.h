#pragma once
// Where this program's own file lies, so that what is installed beside it (the
// CUDA module in ../lib/<multiarch>/h2o-studio, the demo in ../share/h2o-studio)
// is found however it was started: from $PATH, a menu entry, or a build folder.
#include <filesystem>

namespace h2o {

// The running executable (/proc/self/exe, links resolved); empty where the
// system does not say (no /proc mounted).
std::filesystem::path executable_path();
// Its folder; empty where executable_path() is.
std::filesystem::path executable_dir();

}  // namespace h2o
