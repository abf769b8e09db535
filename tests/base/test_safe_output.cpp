// core/base/safe_output.h and atomic_file.h: no output lands on an input,
// a run folder is held by one live process at a time and never replaces an
// earlier run, and temporaries of processes that are gone are cleaned up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/safe_output.h"
#include "tests/assets.h"
#include "tests/error_helpers.h"

using namespace h2o;
using h2o::test::error_of;
namespace fs = std::filesystem;

namespace {

// Above any pid_max (4194304 at most on Linux): a process that is surely gone.
constexpr long kDeadPid = 999999999;

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(SafeOutput, SameFileSeesThroughLinks) {
  const fs::path dir = test::temp_dir("same-file");
  write_text(dir / "a", "a");
  write_text(dir / "b", "a");
  fs::create_hard_link(dir / "a", dir / "hard");
  fs::create_symlink(dir / "a", dir / "soft");
  EXPECT_TRUE(same_file((dir / "a").string(), (dir / "hard").string()));
  EXPECT_TRUE(same_file((dir / "soft").string(), (dir / "a").string()));
  EXPECT_TRUE(same_file((dir / "a").string(), (dir / "." / "a").string()));
  EXPECT_FALSE(same_file((dir / "a").string(), (dir / "b").string()));
  EXPECT_FALSE(same_file((dir / "a").string(), (dir / "missing").string()));
  const std::vector<FlagPath> inputs = {{"--model", "synthetic:x"}, {"--ids", (dir / "a").string()}};
  EXPECT_EQ(error_of([&] { refuse_outputs_over_inputs({{"--csv", (dir / "hard").string()}}, inputs); }),
            "--csv: " + (dir / "hard").string() + " is the file given as --ids (" + (dir / "a").string() +
                "); an output never overwrites an input: choose another path");
  EXPECT_NO_THROW(refuse_outputs_over_inputs({{"--csv", (dir / "new").string()}}, {{"--ids", (dir / "a").string()}}));
  fs::remove_all(dir);
}

TEST(SafeOutput, TemporariesOfProcessesThatAreGoneAreRemoved) {
  EXPECT_EQ(temporary_owner("steps.jsonl.tmp-1234"), 1234);
  EXPECT_EQ(temporary_owner("steps.jsonl.tmp-12a"), 0);
  EXPECT_EQ(temporary_owner("steps.jsonl"), 0);
  const fs::path dir = test::temp_dir("stale");
  const std::string dead = ".tmp-" + std::to_string(kDeadPid), mine = ".tmp-" + std::to_string(::getpid());
  const std::string parent = ".tmp-" + std::to_string(::getppid());
  for (const std::string& name : {"ids.txt" + dead, "other.csv" + dead, "ids.txt" + mine, "ids.txt" + parent})
    write_text(dir / name, "x");
  write_text(dir / "ids.txt", "x");
  remove_stale_temporaries(dir.string(), "ids.txt");  // only that file's
  EXPECT_FALSE(fs::exists(dir / ("ids.txt" + dead)));
  EXPECT_TRUE(fs::exists(dir / ("other.csv" + dead)));
  EXPECT_TRUE(fs::exists(dir / ("ids.txt" + mine)));    // this process is writing it
  EXPECT_TRUE(fs::exists(dir / ("ids.txt" + parent)));  // a live process is
  EXPECT_TRUE(fs::exists(dir / "ids.txt"));
  remove_stale_temporaries(dir.string());  // every dead one
  EXPECT_FALSE(fs::exists(dir / ("other.csv" + dead)));
  // A new AtomicFile cleans its destination's stale temporaries too.
  write_text(dir / ("out.csv" + dead), "left by a killed run");
  AtomicFile f((dir / "out.csv").string());
  EXPECT_FALSE(fs::exists(dir / ("out.csv" + dead)));
  fs::remove_all(dir);
}

TEST(SafeOutput, AtomicFileRefusesAFolderAndPublishesWholeOrNothing) {
  const fs::path dir = test::temp_dir("atomic");
  EXPECT_EQ(error_of([&] { AtomicFile f(dir.string()); }), dir.string() + ": is a folder; give a file path to write");
  // A rename over a device would replace it (as root, /dev/null itself).
  EXPECT_EQ(error_of([&] { AtomicFile f("/dev/null"); }),
            "/dev/null: is not a regular file (a device, a pipe or a socket); give a file path to write");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // Through a link, the file it names is written and the link stays.
  write_text(dir / "real.csv", "old");
  fs::create_symlink(dir / "real.csv", dir / "link.csv");
  {
    AtomicFile f((dir / "link.csv").string());
    f.stream() << "new";
    f.commit();
  }
  EXPECT_TRUE(fs::is_symlink(dir / "link.csv"));
  EXPECT_EQ(read_text(dir / "real.csv"), "new");
  fs::remove(dir / "link.csv");
  fs::remove(dir / "real.csv");
  // A dangling link, two links deep and relative: its target is made, the links stay links.
  fs::create_directory(dir / "sub");
  fs::create_symlink("sub/hop.csv", dir / "dangling.csv");
  fs::create_symlink("made.csv", dir / "sub" / "hop.csv");
  {
    AtomicFile f((dir / "dangling.csv").string());
    f.stream() << "made";
    f.commit();
  }
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.csv"));
  EXPECT_TRUE(fs::is_symlink(dir / "sub" / "hop.csv"));
  EXPECT_EQ(read_text(dir / "sub" / "made.csv"), "made");
  fs::remove_all(dir / "sub");
  fs::remove(dir / "dangling.csv");
  // A read-only file (through a link too) is refused and kept; a writable one replaced keeps its mode.
  write_text(dir / "locked.csv", "kept");
  fs::permissions(dir / "locked.csv", fs::perms::owner_read | fs::perms::group_read);
  fs::create_symlink("locked.csv", dir / "to-locked.csv");
  for (const char* name : {"locked.csv", "to-locked.csv"})
    EXPECT_EQ(error_of([&] { AtomicFile f((dir / name).string()); }),
              (dir / name).string() + ": is read-only; make it writable or choose another path");
  EXPECT_EQ(read_text(dir / "locked.csv"), "kept");
  fs::remove(dir / "to-locked.csv");
  fs::remove(dir / "locked.csv");
  write_text(dir / "private.csv", "old");
  fs::permissions(dir / "private.csv", fs::perms::owner_read | fs::perms::owner_write);
  write_file_atomic((dir / "private.csv").string(), "new");
  EXPECT_EQ(read_text(dir / "private.csv"), "new");
  EXPECT_EQ(fs::status(dir / "private.csv").permissions(), fs::perms::owner_read | fs::perms::owner_write);
  fs::remove(dir / "private.csv");
  // A loop of links is refused in one line, and nothing is made.
  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  EXPECT_EQ(error_of([&] { AtomicFile f((dir / "loop-a").string()); }),
            (dir / "loop-a").string() + ": is a chain of more than 40 symbolic links (a loop?); give a file path to write");
  fs::remove(dir / "loop-a");
  fs::remove(dir / "loop-b");
  {
    AtomicFile a((dir / "a.txt").string()), b((dir / "b.txt").string());
    a.stream() << "first";
    b.stream() << "second";
    a.finish();
    b.finish();
    EXPECT_FALSE(fs::exists(dir / "a.txt"));  // finished is not yet published
    a.publish();
    b.publish();
  }
  EXPECT_EQ(read_text(dir / "a.txt"), "first");
  EXPECT_EQ(read_text(dir / "b.txt"), "second");
  {
    AtomicFile dropped((dir / "c.txt").string());
    dropped.stream() << "never published";
  }
  EXPECT_FALSE(fs::exists(dir / "c.txt"));
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(temporary_owner(e.path().filename().string()), 0);
  fs::remove_all(dir);
}

TEST(SafeOutput, RunFolderIsHeldByOneLiveOwner) {
  const fs::path root = test::temp_dir("run-folder");
  const fs::path dir = root / "runs" / "one";
  {
    RunFolder held(dir.string(), true);
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_EQ(read_text(dir / RunFolder::kLockName), std::to_string(::getpid()) + "\n");
    // Another holder (here: a second open of the lock) is refused, naming the owner.
    EXPECT_EQ(error_of([&] { RunFolder again(dir.string(), false); }),
              dir.string() + ": in use by process " + std::to_string(::getpid()) +
                  " (its .h2o-run.lock); wait for that run to end or choose another folder");
  }
  EXPECT_FALSE(fs::exists(dir)) << "made, nothing published: removed again";

  // A lock and temporaries left by a process that is gone are taken over.
  fs::create_directories(dir);
  write_text(dir / RunFolder::kLockName, std::to_string(kDeadPid) + "\n");
  write_text(dir / ("steps.jsonl.tmp-" + std::to_string(kDeadPid)), "half a step");
  {
    RunFolder taken(dir.string(), true);
    EXPECT_EQ(read_text(dir / RunFolder::kLockName), std::to_string(::getpid()) + "\n");
    EXPECT_FALSE(fs::exists(dir / ("steps.jsonl.tmp-" + std::to_string(kDeadPid))));
    write_text(dir / "manifest.json", "{}");
  }
  EXPECT_FALSE(fs::exists(dir / RunFolder::kLockName));
  EXPECT_TRUE(fs::exists(dir / "manifest.json")) << "a folder with a run in it stays";

  // An earlier run is never replaced by a fresh one; writing into it is asked for explicitly.
  EXPECT_EQ(error_of([&] { RunFolder fresh(dir.string(), true); }),
            dir.string() +
                ": already holds files (manifest.json); an earlier run is never replaced: choose another folder");
  EXPECT_NO_THROW(RunFolder(dir.string(), false));
  EXPECT_EQ(read_text(dir / "manifest.json"), "{}");

  write_text(root / "a-file", "x");
  EXPECT_EQ(error_of([&] { RunFolder f((root / "a-file").string(), true); }),
            (root / "a-file").string() + ": exists and is not a folder");
  fs::remove_all(root);
}

TEST(SafeOutput, UnusedPathCountsUp) {
  const fs::path dir = test::temp_dir("unused");
  const std::string base = (dir / "stream-20261126-000000").string();
  EXPECT_EQ(unused_path(base), base);
  fs::create_directories(base);
  EXPECT_EQ(unused_path(base), base + "-2");
  fs::create_directories(base + "-2");
  EXPECT_EQ(unused_path(base), base + "-3");
  fs::remove_all(dir);
}
