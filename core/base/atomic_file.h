#pragma once
// An output file that appears whole or not at all: written under a temporary
// name beside its destination (`<path>.tmp-<pid>`) and renamed over it on
// commit(). Destroyed without commit() (an error, an exception), it removes
// the temporary file; a fatal signal removes it too (signal_cleanup.h), and
// temporaries of this name left by processes that are gone (SIGKILL) are
// removed when the next one is made.
#include <fstream>
#include <string>

namespace h2o {

class AtomicFile {
 public:
  // Throws Error naming `path` when it is a folder or not a regular file, a
  // file with no write permission, or when its temporary cannot be made. A
  // symbolic link's file is written, the link kept; a file replaced keeps its mode.
  explicit AtomicFile(std::string path, std::ios::openmode mode = std::ios::out | std::ios::trunc);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  const std::string& path() const { return path_; }
  // The temporary's name, for a writer that opens the file itself (a recording):
  // finish() first (this stream writes nothing), let it write there, then publish().
  const std::string& temporary() const { return temp_; }
  // Throws Error("<path>: write failed ...") once a write has failed (a full disk).
  void check();
  // finish() then publish(). Throws Error.
  void commit();
  // Flushes and closes the temporary, checking for write errors (on an error
  // the temporary is removed). Files published together finish first, so
  // that a full disk publishes none of them. Throws Error.
  void finish();
  // Renames the finished temporary into place. Throws Error.
  void publish();
  // Removes the temporary file without publishing it.
  void discard();

 private:
  std::string path_, target_, temp_;  // target_: path_, or the file a link at path_ names
  std::ofstream out_;
  bool open_ = false, finished_ = false;
  int ticket_ = -1;
  int mode_ = -1;  // the permission bits of the file replaced, -1: none was there
};

// Writes `contents` to `path` atomically. Throws Error.
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace h2o
