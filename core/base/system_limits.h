#pragma once
// What this machine allows, for bounding flags before anything is sized by
// them: its memory and its hardware threads.
#include <cstdint>

namespace h2o {

// Physical memory of the machine in bytes (at least 1 GiB is assumed when unknown).
int64_t physical_memory_bytes();
// Hardware threads (at least 1).
int hardware_threads();
// The most CPU threads a pool may have: kThreadsPerCore times the hardware threads.
// More only time-slices the same cores, and every fork-join waits for the slowest.
constexpr int kThreadsPerCore = 2;
int max_threads();

}  // namespace h2o
