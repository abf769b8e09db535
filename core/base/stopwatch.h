#pragma once
// Seconds on the monotonic clock, for a pipeline that says where its time
// goes (h2o-bench-studio's stages): a Stopwatch reads them, a StageTimer
// adds the seconds of its own scope to a running total.
#include <chrono>

namespace h2o {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

class StageTimer {
 public:
  explicit StageTimer(double& total) : total_(total) {}
  ~StageTimer() { total_ += watch_.seconds(); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  double& total_;
  Stopwatch watch_;
};

}  // namespace h2o
