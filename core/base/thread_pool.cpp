#include "core/base/thread_pool.h"

#include <algorithm>
#include <string>
#include <system_error>

#include "core/base/error.h"
#include "core/base/flush_denormals.h"

namespace h2o {
namespace {

// About 20-50 µs of polling before a thread goes to sleep.
constexpr int kSpins = 20000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  // Workers start from generation 0, not from whatever they read once they
  // run: a job posted before a worker's first instruction must not be missed.
  workers_.reserve(size_t(std::max(1, threads) - 1));  // emplace_back then never reallocates, never throws bad_alloc
  try {
    for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this] { worker_loop(0); });
  } catch (const std::system_error& e) {
    // The system refused a thread (process or memory limits): stop the ones
    // started, since a joinable std::thread destroyed unjoined aborts the program.
    const int started = size();
    stop_workers();
    fail("--threads", std::to_string(threads) + " threads asked, the system refused to start more than " +
                          std::to_string(started) + " (" + e.what() + "); ask for fewer");
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  stop_ = true;
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

void ThreadPool::run_chunks() {
  for (;;) {
    const int begin = next_.fetch_add(grain_, std::memory_order_relaxed);
    if (begin >= n_) return;
    (*job_)(begin, std::min(n_, begin + grain_));
  }
}

// A worker enters the job open now, which may be a later one than it woke
// for: the job's fields were written before it was opened, and it stays
// open-or-waited-for until this worker leaves.
bool ThreadPool::enter_job() {
  int state = inside_.load(std::memory_order_acquire);
  while (!(state & kClosed))
    if (inside_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
  return false;
}

void ThreadPool::leave_job() {
  if (inside_.fetch_sub(1, std::memory_order_acq_rel) == (kClosed | 1)) inside_.notify_one();
}

void ThreadPool::worker_loop(uint32_t seen) {
  const FlushDenormals fast_floats;  // as the thread that posts the jobs does (CpuBackend::forward)
  for (;;) {
    uint32_t now = generation_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen && spin < kSpins; ++spin) {
      cpu_relax();
      now = generation_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = now;
    if (stop_) return;
    if (!enter_job()) continue;  // every chunk taken already: nothing to wait for this worker
    run_chunks();
    leave_job();
  }
}

void ThreadPool::parallel_for(int n, int grain, const std::function<void(int, int)>& fn) {
  if (n <= 0) return;
  grain = std::max(1, grain);
  if (workers_.empty() || n <= grain) {
    for (int begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
    return;
  }
  // The last job is closed and no worker is inside it: its fields are free.
  job_ = &fn;
  n_ = n;
  grain_ = grain;
  next_.store(0, std::memory_order_relaxed);
  inside_.store(0, std::memory_order_release);  // open
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  run_chunks();
  // Every chunk is taken: close the job, then wait only for the workers
  // inside it (those still running a chunk).
  int state = inside_.fetch_or(kClosed, std::memory_order_acq_rel) | kClosed;
  for (int spin = 0; state != kClosed && spin < kSpins; ++spin) {
    cpu_relax();
    state = inside_.load(std::memory_order_acquire);
  }
  while (state != kClosed) {
    inside_.wait(state, std::memory_order_acquire);
    state = inside_.load(std::memory_order_acquire);
  }
}

}  // namespace h2o
