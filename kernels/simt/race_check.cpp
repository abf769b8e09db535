// The race check's shadow of shared memory (race_check.h).
//
// Each element keeps what a later access must be checked against, for the
// latest barrier interval only (an access of an earlier interval is ordered
// before anything now): the last plain write, and two groups, the atomic
// updates and the reads, since many threads may read one element (or update
// it atomically) in one interval without a race. A group keeps three stamps,
// which is enough to find a conflicting member whenever one exists: two
// accesses of one warp are unordered only at the same warp step, steps only
// grow, so of a warp's accesses only those at its latest step matter (two
// threads' worth: one of them differs from any later thread), and any access
// from a second warp conflicts with every later access but that warp's own.
#include "kernels/simt/race_check.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

namespace simt {

namespace detail {
namespace {
bool race_check_from_environment() {
  const char* env = std::getenv("SIMT_RACE_CHECK");
  return !(env && std::string(env) == "0");
}
}  // namespace
bool g_race_check = race_check_from_environment();
Point g_now;
}  // namespace detail

namespace {

using detail::Point;

struct Stamp {
  uint64_t interval = 0;  // 0: none
  uint32_t step = 0;
  int16_t thread = 0;
  uint16_t warp = 0;
};

Stamp stamp_of(const Point& p) { return Stamp{p.interval, p.warp_step, int16_t(p.thread), uint16_t(p.warp)}; }

// Whether nothing orders access `a` before the access `p` of another thread.
bool unordered(const Stamp& a, const Point& p) {
  return a.interval == p.interval && a.thread != p.thread && (a.warp != p.warp || a.step == p.warp_step);
}

// Accesses of one kind in the latest interval (see the top of this file).
struct Group {
  Stamp latest;      // the latest access of one warp, "its warp"
  Stamp same_step;   // another thread of that warp at latest's step
  Stamp other_warp;  // the first access from any other warp

  void note(const Point& p) {
    if (latest.interval != p.interval) {
      latest = stamp_of(p);
      same_step.interval = other_warp.interval = 0;  // (whole-stamp copies here stall store forwarding)
    } else if (int(latest.warp) == p.warp) {
      if (latest.step != p.warp_step) {
        latest = stamp_of(p);
        same_step.interval = 0;
      } else if (latest.thread != p.thread && same_step.interval != p.interval) {
        same_step = stamp_of(p);
      }
    } else if (other_warp.interval != p.interval) {
      other_warp = stamp_of(p);
    }
  }
  const Stamp* conflict(const Point& p) const {
    if (latest.interval != p.interval) return nullptr;  // the common case: nothing of this kind yet
    for (const Stamp* s : {&latest, &same_step, &other_warp})
      if (unordered(*s, p)) return s;
    return nullptr;
  }
};

std::mutex g_handler_mutex;
// Made at first use: a handler may be installed by another file's static initialiser.
RaceHandler& handler_slot() {
  static RaceHandler handler;  // empty: print and abort
  return handler;
}

void handle(const RaceReport& r) {
  RaceHandler handler;
  {
    std::lock_guard<std::mutex> lock(g_handler_mutex);
    handler = handler_slot();
  }
  if (handler) return handler(r);
  std::fprintf(stderr, "%s\n", r.what().c_str());
  std::abort();
}

const char* verb(Access a) {
  switch (a) {
    case Access::Read:
      return "read";
    case Access::Write:
      return "wrote";
    case Access::Atomic:
      return "atomically updated";
  }
  return "?";
}

}  // namespace

// 128 bytes, the write and the reads (what most accesses touch) in one cache line.
struct alignas(64) Cell {
  Stamp write;  // the last plain write
  Group reads, atomics;
};

SharedVar::~SharedVar() { delete[] shadow; }

std::string RaceReport::what() const {
  std::string s = "simt: in kernel " + kernel + ", block (" + std::to_string(block[0]) + "," +
                  std::to_string(block[1]) + "," + std::to_string(block[2]) + "): __shared__ `" + array + "` (in " +
                  function + ") element " + std::to_string(element) + " (byte " + std::to_string(byte_offset) + "): ";
  if (first_thread < 0)
    return s + "thread " + std::to_string(second_thread) + " " + verb(second) +
           " it before any thread of the block wrote it (shared memory starts undefined)";
  return s + "race: thread " + std::to_string(first_thread) + " " + verb(first) + " it and thread " +
         std::to_string(second_thread) + " " + verb(second) + " it with no barrier between";
}

RaceHandler set_race_handler(RaceHandler handler) {
  std::lock_guard<std::mutex> lock(g_handler_mutex);
  return std::exchange(handler_slot(), std::move(handler));
}

bool race_check_enabled() { return detail::g_race_check; }
void set_race_check(bool on) { detail::g_race_check = on; }

RaceRecorder::RaceRecorder() {
  saved_ = set_race_handler([this](const RaceReport& r) { reports_.push_back(r); });
}
RaceRecorder::~RaceRecorder() { set_race_handler(std::move(saved_)); }

namespace {

// `earlier` (first_thread < 0: none) against the access now.
void report(SharedVar& var, size_t index, const Stamp* earlier, Access earlier_access, const Point& p, Access now) {
  const detail::LaunchInfo launch = detail::current_launch();
  uint64_t& reported = earlier ? var.race_reported : var.unwritten_reported;
  if (reported == launch.serial) return;
  reported = launch.serial;
  RaceReport r;
  r.kernel = launch.kernel ? launch.kernel : "?";
  r.block = launch.block;
  r.array = var.name;
  r.function = var.function;
  r.element = index;
  r.byte_offset = index * var.element_bytes;
  r.first_thread = earlier ? earlier->thread : -1;
  r.first = earlier_access;
  r.second_thread = p.thread;
  r.second = now;
  handle(r);
}

}  // namespace

void detail::record_shared(SharedVar& var, size_t index, Access access) {
  const Point& p = g_now;
  if (index >= var.elements) {  // below the array wraps around to a huge index
    std::fprintf(stderr, "simt: in kernel %s: an access outside __shared__ `%s` (in %s): element %td of %zu\n",
                 current_launch().kernel, var.name, var.function, ptrdiff_t(index), var.elements);
    std::abort();
  }
  if (!var.shadow) var.shadow = new Cell[var.elements]();
  Cell& c = var.shadow[index];
  const bool written_in_block = c.write.interval >= p.block_begin || c.atomics.latest.interval >= p.block_begin;
  const Stamp* hit = nullptr;
  Access hit_access = Access::Write;
  if (unordered(c.write, p)) {
    hit = &c.write;
  } else if (access != Access::Atomic && (hit = c.atomics.conflict(p))) {
    hit_access = Access::Atomic;
  } else if (access != Access::Read && (hit = c.reads.conflict(p))) {
    hit_access = Access::Read;
  }
  if (hit)
    report(var, index, hit, hit_access, p, access);
  else if (access != Access::Write && !written_in_block)
    report(var, index, nullptr, Access::Write, p, access);
  switch (access) {
    case Access::Read:
      c.reads.note(p);
      break;
    case Access::Write:
      c.write = stamp_of(p);
      break;
    case Access::Atomic:
      c.atomics.note(p);
      break;
  }
}

}  // namespace simt
