#pragma once
// The machine's memory read bandwidth, measured the way decode reads its
// weights: every thread streams its share of one buffer through vector loads.
// A benchmark compares a decode step's bytes against this for the same
// working set (a small model is served from cache, a large one from DRAM).
#include <cstddef>

#include "core/base/thread_pool.h"

namespace h2o::cpu {

// GB/s reading `bytes` (rounded to whole 64-byte lines) with the pool's
// threads: the best of a few passes after one warm-up pass.
double measure_read_bandwidth(size_t bytes, ThreadPool& pool);

}  // namespace h2o::cpu
