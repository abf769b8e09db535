#pragma once
// A small fork-join pool for the CPU backend. Workers spin briefly for the
// next job and then sleep, so that a loaded machine (the GUI thread, other
// programs) is not starved by threads busy-waiting, while back-to-back jobs
// on an idle machine still start within microseconds.
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace h2o {

class ThreadPool {
 public:
  // The calling thread is one of them. Throws Error naming --threads, having
  // started nothing, when the system refuses a thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  // Calls fn(begin, end) over [0, n) in chunks of `grain`, on every thread;
  // returns when all chunks are done. Not reentrant.
  void parallel_for(int n, int grain, const std::function<void(int, int)>& fn);

 private:
  void worker_loop(uint32_t seen);  // seen: the last generation handled
  void run_chunks();
  void stop_workers();

  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  int n_ = 0, grain_ = 1;
  std::atomic<int> next_{0};
  std::atomic<int> busy_{0};           // workers still inside the current job
  std::atomic<uint32_t> generation_{0};  // bumped for every job; workers wait on it
  std::atomic<bool> stop_{false};
};

}  // namespace h2o
