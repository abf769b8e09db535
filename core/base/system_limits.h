#pragma once
// What this machine allows, for bounding flags before anything is sized by
// them: its memory and the CPUs this process may run on.
#include <cstdint>

namespace h2o {

// Physical memory of the machine in bytes (at least 1 GiB is assumed when unknown).
int64_t physical_memory_bytes();
// The CPUs this process may run on (its affinity: `taskset -c 0` gives 1,
// whatever the machine has), at least 1. Every default thread count is this.
int hardware_threads();
// The most CPU threads a pool may have: kThreadsPerCore times hardware_threads().
// More only time-slices the same cores, and every fork-join waits for the slowest.
constexpr int kThreadsPerCore = 2;
int max_threads();

}  // namespace h2o
