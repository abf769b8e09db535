#include "core/base/run_files.h"

#include <filesystem>

#include "core/base/error.h"

namespace h2o {

RunFiles::RunFiles(const std::string& dir, bool fresh) : folder_(dir, fresh) {}

// Abandoned (an error mid-run): the temporary files go first, then the lock
// and the folder, if this set made it.
RunFiles::~RunFiles() { files_.clear(); }

std::ostream& RunFiles::add(const std::string& path) {
  std::error_code ec;
  const auto same = [&](const std::string& other) {
    return std::filesystem::weakly_canonical(path, ec) == std::filesystem::weakly_canonical(other, ec);
  };
  for (const auto& f : files_)
    if (same(f->path())) fail(path, "is one of this run's own files; give another path");
  files_.push_back(std::make_unique<AtomicFile>(path));
  return files_.back()->stream();
}

void RunFiles::check() {
  for (auto& f : files_) f->check();
}

void RunFiles::publish() {
  // Every file whole on disk before any takes its name: a full disk publishes none.
  for (auto& f : files_) f->finish();
  for (auto& f : files_) f->publish();
  files_.clear();
}

}  // namespace h2o
