#include "core/base/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/safe_output.h"
#include "core/base/signal_cleanup.h"

namespace h2o {

AtomicFile::AtomicFile(std::string path, std::ios::openmode mode)
    : path_(std::move(path)), target_(output_file_target(path_)) {
  // Same folder as the destination, so that the rename never crosses devices.
  // A file already there keeps its mode; one its owner made read-only is not replaced (as root,
  // access() would allow it: the mode's write bits are what the owner said).
  struct stat existing {};
  if (::stat(target_.c_str(), &existing) == 0) {
    if ((existing.st_mode & 0222) == 0 || ::access(target_.c_str(), W_OK) != 0)
      fail(path_, "is read-only; make it writable or choose another path");
    mode_ = int(existing.st_mode & 07777);
  }
  const std::filesystem::path p(target_);
  remove_stale_temporaries(p.parent_path().string(), p.filename().string());
  temp_ = target_ + ".tmp-" + std::to_string(::getpid());
  ticket_ = register_temporary(temp_);
  out_.open(temp_, mode | std::ios::binary);
  if (!out_) {
    const int err = errno;
    unregister_temporary(ticket_);
    fail(path_, std::string("cannot create: ") + std::strerror(err));
  }
  open_ = true;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::check() {
  if (open_ && !out_) {
    discard();
    fail(path_, "write failed (disk full?)");
  }
}

void AtomicFile::finish() {
  if (!open_) return;
  out_.flush();
  const bool ok = bool(out_);
  out_.close();
  open_ = false;
  finished_ = true;
  if (!ok || out_.fail()) {
    discard();
    fail(path_, "write failed (disk full?)");
  }
}

void AtomicFile::publish() {
  finish();
  if (!finished_) return;
  finished_ = false;
  if (mode_ >= 0) ::chmod(temp_.c_str(), mode_t(mode_));  // best effort: the contents matter more than the bits
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_.c_str());
    unregister_temporary(ticket_);
    fail(path_, std::string("cannot rename into place: ") + std::strerror(err));
  }
  unregister_temporary(ticket_);
}

void AtomicFile::commit() {
  finish();
  publish();
}

void AtomicFile::discard() {
  if (!open_ && !finished_) return;
  if (open_) out_.close();
  open_ = finished_ = false;
  std::remove(temp_.c_str());
  unregister_temporary(ticket_);
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  AtomicFile f(path);
  f.stream().write(contents.data(), std::streamsize(contents.size()));
  f.commit();
}

}  // namespace h2o
