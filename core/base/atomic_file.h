#pragma once
// An output file that appears whole or not at all: written under a temporary
// name beside its destination and renamed over it on commit(). Destroyed
// without commit() (an error, an exception), it removes the temporary file.
#include <fstream>
#include <string>

namespace h2o {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path, std::ios::openmode mode = std::ios::out | std::ios::trunc);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  const std::string& path() const { return path_; }
  // Flushes, checks for write errors, and renames into place. Throws Error.
  void commit();
  // Removes the temporary file without publishing it.
  void discard();

 private:
  std::string path_, temp_;
  std::ofstream out_;
  bool open_ = false;
};

// Writes `contents` to `path` atomically. Throws Error.
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace h2o
