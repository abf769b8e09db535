#pragma once
// The float32 CPU backend (cpu_backend.cpp): weights widened to f32 once,
// every session's rows through one pass of the projections, attention per
// session and KV head on a thread pool.
#include <cstdint>
#include <memory>

#include "core/runtime/backend.h"

namespace h2o {

// threads 0: all cores. kv_limit_bytes 0: no limit on the caches' memory.
std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const Model> model, int threads, int64_t kv_limit_bytes = 0);

}  // namespace h2o
