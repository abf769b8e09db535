#pragma once
// Where the tests find ../shared/assets: $H2O_ASSETS, else the default folder
// beside the project. Tests that need a file call H2O_REQUIRE_ASSET, which
// skips (reported as skipped) when it is absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace h2o::test {

inline std::string assets_dir() {
  if (const char* env = std::getenv("H2O_ASSETS"); env && *env) return env;
  return H2O_DEFAULT_ASSETS;
}

inline std::string asset(const std::string& name) { return assets_dir() + "/" + name; }

inline bool have_asset(const std::string& name) { return std::filesystem::exists(asset(name)); }

// A fresh empty folder for one test's files.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("h2o-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace h2o::test

#define H2O_REQUIRE_ASSET(name)                                                                  \
  do {                                                                                           \
    if (!::h2o::test::have_asset(name)) GTEST_SKIP() << "asset " << (name) << " not found in " \
                                                     << ::h2o::test::assets_dir();             \
  } while (0)
