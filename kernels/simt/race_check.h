#pragma once
// The race check of the SIMT emulation. Every access to __shared__ memory
// goes through the checked types of shared.h, which tell it the element, the
// thread, and whether it read, wrote or updated atomically. Two threads
// touching one element in one barrier interval, at least one writing and not
// both atomically, is a race: on the GPU nothing orders them, whatever order
// the fibers happened to run in here. What orders two accesses: a
// __syncthreads() between them; for two lanes of one warp, also a warp
// barrier (a shuffle or __syncwarp: the warp converges there). A read of an
// element that no thread of the block has written is reported too: on the GPU
// shared memory starts undefined in every block, here it holds what the
// previous block left.
//
// On by default; SIMT_RACE_CHECK=0 in the environment or set_race_check(false)
// turns it off. A finding goes to the handler: by default it is printed and
// the process aborts; the emulated test program fails the running test
// instead (tests/cuda/emu_device.cpp), and RaceRecorder collects findings for
// a test that expects them. Per array and launch, one race and one read of an
// unwritten element are reported.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace simt {

enum class Access : uint8_t { Read, Write, Atomic };

struct Cell;  // an element's recent accesses (race_check.cpp)

// One __shared__ declaration (H2O_SHARED): what a report names, and its shadow.
struct SharedVar {
  SharedVar(const char* name_, const char* function_, const void* base_, size_t element_bytes_, size_t elements_)
      : name(name_), function(function_), base(base_), element_bytes(element_bytes_), elements(elements_) {}
  ~SharedVar();
  SharedVar(const SharedVar&) = delete;
  SharedVar& operator=(const SharedVar&) = delete;

  const char* name;
  const char* function;  // the function that declares it
  const void* base;
  size_t element_bytes, elements;
  Cell* shadow = nullptr;  // a cell an element, made at the first checked access
  // The last launches that reported a race, and a read of an unwritten element, on it.
  uint64_t race_reported = 0, unwritten_reported = 0;
};

struct RaceReport {
  std::string kernel;  // as launched, e.g. "evict_kernel<T>"
  std::array<unsigned, 3> block{};
  std::string array, function;  // the __shared__ variable and the function declaring it
  size_t element = 0, byte_offset = 0;
  // Linear thread indices in the block. first_thread < 0: a read of an
  // element that no thread of the block had written.
  int first_thread = -1, second_thread = -1;
  Access first = Access::Write, second = Access::Read;
  std::string what() const;
};

using RaceHandler = std::function<void(const RaceReport&)>;
// Installs `handler` (empty: the default, print and abort); returns the previous one.
RaceHandler set_race_handler(RaceHandler handler);

bool race_check_enabled();
void set_race_check(bool on);

// Collects the findings of a scope instead of handling them: for a test
// that expects a race.
class RaceRecorder {
 public:
  RaceRecorder();
  ~RaceRecorder();
  RaceRecorder(const RaceRecorder&) = delete;
  RaceRecorder& operator=(const RaceRecorder&) = delete;
  const std::vector<RaceReport>& reports() const { return reports_; }

 private:
  std::vector<RaceReport> reports_;
  RaceHandler saved_;
};

namespace detail {

extern bool g_race_check;
void record_shared(SharedVar& var, size_t element, Access access);

// The thread running now, as the scheduler (simt.cpp) keeps it up to date at
// every switch and barrier: a plain global, read at every shared access (one
// grid runs at a time, whichever OS thread launches it).
struct Point {
  uint64_t interval = 0;     // its block's barrier interval: unique in the process
  uint64_t block_begin = 0;  // the block's first interval
  uint32_t warp_step = 0;    // warp barriers its warp has passed in this block
  int thread = 0, warp = 0;  // linear index in the block, and its warp
};
extern Point g_now;
struct LaunchInfo {
  const char* kernel;
  uint64_t serial;  // launches so far, this one included
  std::array<unsigned, 3> block;
};
LaunchInfo current_launch();

}  // namespace detail

// The hot path: one branch when the check is off. `element`: of var's scalar type T.
template <class T>
inline void note_shared(SharedVar& var, const T* element, Access access) {
  if (detail::g_race_check)
    detail::record_shared(var, (reinterpret_cast<uintptr_t>(element) - reinterpret_cast<uintptr_t>(var.base)) / sizeof(T),
                          access);
}

}  // namespace simt
