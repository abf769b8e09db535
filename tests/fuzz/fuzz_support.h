#pragma once
// Shared by the fuzz targets: the loaders read files by path, so each input is
// written to a file in a per-process scratch folder first; and a loaded model's
// tensors are read end to end, so a view that points outside its file shows
// up as a sanitizer report or a segfault instead of passing silently.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace h2o::fuzz {

// A scratch folder that lives as long as the fuzzing process and goes with it: libFuzzer ends a
// timed run with exit(), which runs this static's destructor (every CI run had left eight folders
// in /tmp). A crash leaves it, with the input that crashed beside libFuzzer's own copy.
inline const std::filesystem::path& scratch_dir() {
  struct Scratch {
    std::filesystem::path path;
    Scratch() {
      std::string tmpl = (std::filesystem::temp_directory_path() / "h2o-fuzz-XXXXXX").string();
      if (!::mkdtemp(tmpl.data())) std::abort();
      path = tmpl;
    }
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Scratch dir;
  return dir.path;
}

// Writes `size` bytes to scratch_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  out.close();
  if (!out) std::abort();  // the harness, not the input, is broken
  return path.string();
}

// Reads every byte of every tensor; the sum is kept so the reads are not optimised away.
inline void touch_tensors(const Model& model) {
  volatile uint64_t sum = 0;
  for (const Tensor* t : model.all_tensors()) {
    const auto* p = static_cast<const uint8_t*>(t->data);
    const int64_t n = t->bytes();
    if (n < 0 || (n > 0 && !p)) std::abort();
    for (int64_t i = 0; i < n; ++i) sum = sum + p[i];
  }
  (void)sum;
}

// Every view of a model mapped from one file lies inside that file's bytes;
// Qwen2's and GPT-NeoX's q/k rows (and biases) are interleaved copies instead.
inline void check_inside(const Model& model, const uint8_t* begin, size_t size) {
  const std::string& arch = model.config.architecture;
  std::vector<const Tensor*> copies;
  if (arch == "qwen2" || arch == "gptneox")
    for (const LayerWeights& l : model.weights.layers) copies.insert(copies.end(), {&l.wq, &l.wk, &l.bq, &l.bk});
  for (const Tensor* t : model.all_tensors()) {
    if (std::find(copies.begin(), copies.end(), t) != copies.end()) continue;
    const auto* p = static_cast<const uint8_t*>(t->data);
    if (p < begin || uint64_t(t->bytes()) > size || p + t->bytes() > begin + size) std::abort();
  }
}

}  // namespace h2o::fuzz
