#pragma once
// h2o-bench --op-times: where a decode step's device time goes, per operation,
// on a backend that measures it (the CUDA backend; kernels/op_timer.h says how).
#include <vector>

#include "core/runtime/backend.h"
#include "kernels/cuda_backend.h"

namespace h2o {

// Switches per-operation timing on (totals from zero) or off; false, doing
// nothing, where `backend` does not time operations.
bool set_op_timing(Backend& backend, bool on);
// The totals since timing was switched on; empty where it is not timed.
std::vector<CudaOpTime> op_times(const Backend& backend);

}  // namespace h2o
