#pragma once
// A small fork-join pool for the CPU backend. Workers spin briefly for the
// next job and then sleep, so that a loaded machine (the GUI thread, other
// programs) is not starved by threads busy-waiting, while back-to-back jobs
// on an idle machine still start within microseconds.
//
// A job ends when its chunks are done, not when every worker has seen it:
// a worker the system has not run yet (another program holds its core) is
// shut out of the job once every chunk is taken, so the caller never waits
// for a thread that has nothing to do (it did, and three policies batched
// beside one busy core ran at a fifth of their speed).
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
  bool enter_job();  // false once the job is closed: every chunk was taken
  void leave_job();
  void stop_workers();

  static constexpr int kClosed = 1 << 30;  // in inside_: no worker may enter

  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  int n_ = 0, grain_ = 1;
  std::atomic<int> next_{0};
  std::atomic<int> inside_{kClosed};    // workers inside the current job, | kClosed once it is closed
  std::atomic<uint32_t> generation_{0};  // bumped for every job; workers wait on it
  std::atomic<bool> stop_{false};
};

}  // namespace h2o
