#include "core/base/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"

namespace h2o {

AtomicFile::AtomicFile(std::string path, std::ios::openmode mode) : path_(std::move(path)) {
  // Same folder as the destination, so that the rename never crosses devices.
  temp_ = path_ + ".tmp-" + std::to_string(::getpid());
  out_.open(temp_, mode | std::ios::binary);
  if (!out_) fail(path_, std::string("cannot create: ") + std::strerror(errno));
  open_ = true;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::commit() {
  if (!open_) return;
  out_.flush();
  const bool ok = bool(out_);
  out_.close();
  open_ = false;
  if (!ok) {
    std::remove(temp_.c_str());
    fail(path_, "write failed (disk full?)");
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_.c_str());
    fail(path_, std::string("cannot rename into place: ") + std::strerror(err));
  }
}

void AtomicFile::discard() {
  if (!open_) return;
  out_.close();
  open_ = false;
  std::remove(temp_.c_str());
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  AtomicFile f(path);
  f.stream().write(contents.data(), std::streamsize(contents.size()));
  f.commit();
}

}  // namespace h2o
