#pragma once
// h2o-bench --op-times: where a decode step's device time goes, per operation
// (CUDA backend only; kernels/op_timer.h says how it is measured).
#include <functional>
#include <string>
#include <vector>

#include "core/runtime/backend.h"

namespace h2o {

// One timed configuration: its label and a function that fills its caches,
// calls `start` just before its decode steps (so only they are timed), runs
// them on the backend, and returns how many steps it ran.
struct OpTimedRun {
  std::string label;
  std::function<int(const std::function<void()>& start)> run;
};

// Runs each configuration with per-operation timing on and prints one table:
// a row per operation, per configuration its µs a step and, where the
// operation's bytes are modelled, the share of `bandwidth_gbs` that makes.
// Prints a line saying why and returns false where the backend cannot time operations.
bool print_op_times(Backend& backend, const std::vector<OpTimedRun>& runs, double bandwidth_gbs);

}  // namespace h2o
