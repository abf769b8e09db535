#pragma once
// Outputs that never destroy an input or another run (one place for the
// path, lock and temporary-file rules every writer follows):
//  - an output that is the same file as an input is refused;
//  - a run folder is held by a lock file naming its owner's pid while it is
//    written; a live owner's folder is refused, a dead owner's lock taken over;
//  - temporaries (`<name>.tmp-<pid>`) of processes that are gone are removed
//    by the next writer of the same folder.
#include <string>
#include <vector>

namespace h2o {

// True while process `pid` exists (ours or another user's).
bool process_alive(long pid);

// True when `a` and `b` name the same existing file (same device and inode,
// through links of any kind).
bool same_file(const std::string& a, const std::string& b);

// A path and the flag that named it ("--ids", "--csv").
struct FlagPath {
  std::string flag, path;
};
// Throws Error("<output flag>: <path> is the input given as <flag>; ...") when
// an output is the same file as an input. Outputs or inputs that do not exist
// (yet) are skipped.
void refuse_outputs_over_inputs(const std::vector<FlagPath>& outputs, const std::vector<FlagPath>& inputs);

// Where an output file given as `path` is written: the path itself, or the
// file a symbolic link names (so that the link stays a link), followed link by
// link even when the last names a file not made yet (a dangling link: its
// target is created, not the link replaced). Throws Error for a chain of more
// than 40 links (a loop). Throws
// Error("<path>: is a folder ...") for a folder, and for anything else that
// is not a regular file (a device, a pipe: renaming over /dev/stdout would
// replace it), before any work.
std::string output_file_target(const std::string& path);

// The pid in a temporary's name "<anything>.tmp-<pid>", or 0 when it has none.
long temporary_owner(const std::string& file_name);
// Removes, in `folder`, the temporaries whose owner is gone (`prefix` non-empty:
// only those named `<prefix>.tmp-<pid>`). Never fails.
void remove_stale_temporaries(const std::string& folder, const std::string& prefix = "");

// A folder a run's files are written into, held for the run's lifetime:
// made when missing (removed again, if still empty, when released), locked
// by `.h2o-run.lock` (its owner's pid; an flock the system drops when the
// owner dies, so a stale lock is simply taken over). Throws Error naming the
// folder when another live process holds it, when it cannot be made, or,
// with `fresh`, when it already holds files (an earlier run is never
// replaced; stale temporaries and a stale lock do not count).
class RunFolder {
 public:
  RunFolder(std::string dir, bool fresh);
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;
  const std::string& dir() const { return dir_; }
  static constexpr const char* kLockName = ".h2o-run.lock";

 private:
  void lock();
  void refuse_if_taken() const;
  void release();
  std::string dir_, lock_path_;
  int fd_ = -1;
  bool created_ = false;
  int lock_ticket_ = -1, dir_ticket_ = -1;
};

// The first of `base`, `base-2`, `base-3`, ... that does not exist yet (default run folders).
std::string unused_path(const std::string& base);

}  // namespace h2o
