#include "core/base/safe_output.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/signal_cleanup.h"

namespace fs = std::filesystem;

namespace h2o {
namespace {

long read_pid(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  return n > 0 ? std::strtol(text, nullptr, 10) : 0;
}

bool same_inode(int fd, const std::string& path) {
  struct stat a {}, b {};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void refuse_outputs_over_inputs(const std::vector<FlagPath>& outputs, const std::vector<FlagPath>& inputs) {
  for (const FlagPath& out : outputs)
    for (const FlagPath& in : inputs)
      if (!out.path.empty() && !in.path.empty() && same_file(out.path, in.path))
        fail(out.flag, out.path + " is the file given as " + in.flag + " (" + in.path +
                           "); an output never overwrites an input: choose another path");
}

std::string output_file_target(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) fail(path, "is a folder; give a file path to write");
  if (fs::exists(status) && !fs::is_regular_file(status))
    fail(path, "is not a regular file (a device, a pipe or a socket); give a file path to write");
  if (!fs::is_symlink(fs::symlink_status(path, ec))) return path;
  // Link by link (weakly_canonical would stop at a dangling link and hand back the link itself,
  // which the rename into place then replaces): each relative target is relative to its link's folder.
  fs::path at(path);
  for (int hops = 0; fs::is_symlink(fs::symlink_status(at, ec)); ++hops) {
    if (hops == 40) fail(path, "is a chain of more than 40 symbolic links (a loop?); give a file path to write");
    const fs::path next = fs::read_symlink(at, ec);
    if (ec) fail(path, "cannot read the symbolic link " + at.string() + ": " + ec.message());
    at = next.is_absolute() ? next : at.parent_path() / next;
  }
  const fs::path target = fs::weakly_canonical(at, ec);
  return ec ? at.lexically_normal().string() : target.string();
}

long temporary_owner(const std::string& file_name) {
  const size_t at = file_name.rfind(".tmp-");
  if (at == std::string::npos) return 0;
  const std::string digits = file_name.substr(at + 5);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stol(digits);
}

void remove_stale_temporaries(const std::string& folder, const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder.empty() ? "." : folder, ec)) {
    const std::string name = entry.path().filename().string();
    const long owner = temporary_owner(name);
    if (owner <= 0 || owner == long(::getpid()) || process_alive(owner)) continue;
    if (!prefix.empty() && name.compare(0, prefix.size() + 5, prefix + ".tmp-") != 0) continue;
    std::error_code ignored;
    if (entry.is_regular_file(ignored)) fs::remove(entry.path(), ignored);
  }
}

RunFolder::RunFolder(std::string dir, bool fresh) : dir_(std::move(dir)), lock_path_(dir_ + "/" + kLockName) {
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec)) fail(dir_, "exists and is not a folder");
  created_ = !fs::exists(dir_, ec);
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_, ec))
    fail(dir_, "cannot create the log folder" + (ec ? ": " + ec.message() : std::string()));
  if (created_) dir_ticket_ = register_temporary(dir_, /*folder=*/true);
  try {
    lock();
    remove_stale_temporaries(dir_);
    if (fresh) refuse_if_taken();
  } catch (...) {
    release();
    throw;
  }
}

RunFolder::~RunFolder() { release(); }

void RunFolder::lock() {
  // The last owner may remove the file between our open and our flock: then
  // the lock held is of a name no one sees, and it is taken again.
  for (int attempt = 0; attempt < 8 && fd_ < 0; ++attempt) {
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(dir_, std::string("cannot create its lock file: ") + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const long owner = read_pid(fd_);
      ::close(fd_);
      fd_ = -1;
      fail(dir_, "in use by process " + (owner > 0 ? std::to_string(owner) : std::string("?")) + " (its " +
                     kLockName + "); wait for that run to end or choose another folder");
    }
    if (!same_inode(fd_, lock_path_)) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  if (fd_ < 0) fail(dir_, "cannot lock: its lock file keeps being replaced");
  // Ours: our pid in it, in place of a dead owner's.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    fail(dir_, std::string("cannot write its lock file: ") + std::strerror(errno));
  lock_ticket_ = register_temporary(lock_path_);
}

void RunFolder::refuse_if_taken() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec))
    if (entry.path().filename() != kLockName) names.push_back(entry.path().filename().string());
  if (names.empty()) return;
  std::sort(names.begin(), names.end());
  std::string shown;
  for (size_t i = 0; i < names.size() && i < 3; ++i) shown += (i ? ", " : "") + names[i];
  if (names.size() > 3) shown += ", ...";
  fail(dir_, "already holds files (" + shown + "); an earlier run is never replaced: choose another folder");
}

void RunFolder::release() {
  if (fd_ >= 0) {
    ::unlink(lock_path_.c_str());  // while still locked: the next owner's open makes a new one
    ::close(fd_);
    fd_ = -1;
  }
  unregister_temporary(lock_ticket_);
  lock_ticket_ = -1;
  if (created_) ::rmdir(dir_.c_str());  // only if nothing was published in it
  unregister_temporary(dir_ticket_);
  dir_ticket_ = -1;
}

std::string unused_path(const std::string& base) {
  std::error_code ec;
  std::string path = base;
  for (int i = 2; fs::exists(path, ec); ++i) path = base + "-" + std::to_string(i);
  return path;
}

}  // namespace h2o
