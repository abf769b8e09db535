#pragma once
// The files of one run in one folder, published together: each is written
// under a temporary name (atomic_file.h), and publish() renames them only
// once every one is whole on disk, so a full disk or a bad path publishes
// none of them. The folder is held (RunFolder) while they are open;
// destroyed without publish(), the set leaves nothing behind.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/base/safe_output.h"

namespace h2o {

class RunFiles {
 public:
  // Throws Error as RunFolder does (another live run's folder; with `fresh`, one that holds files).
  RunFiles(const std::string& dir, bool fresh);
  ~RunFiles();
  RunFiles(const RunFiles&) = delete;
  RunFiles& operator=(const RunFiles&) = delete;

  // One more file. Throws Error naming `path` where it cannot be made, or
  // when it is one of this set's own files.
  std::ostream& add(const std::string& path);
  // Throws Error once a write has failed (a full disk).
  void check();
  // Every file finished, then every one renamed into place. Throws Error.
  void publish();
  const std::string& dir() const { return folder_.dir(); }

 private:
  RunFolder folder_;  // first in, last out: the files go before the lock and the folder
  std::vector<std::unique_ptr<AtomicFile>> files_;
};

}  // namespace h2o
