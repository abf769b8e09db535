// The CPU backend's fork-join pool: every index exactly once, any grain, any
// number of threads, many jobs in a row (workers sleeping between some).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include <atomic>
#include <fstream>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/base/thread_pool.h"

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    h2o::ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int grain : {1, 3, 16, 1000}) {
      for (int n : {0, 1, 7, 100, 4097}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, grain, [&](int begin, int end) {
          ASSERT_LE(end - begin, grain);
          for (int i = begin; i < end; ++i) hits[i]++;
        });
        for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " threads, grain " << grain;
      }
    }
  }
}

TEST(ThreadPool, ManyJobsAndSleepingWorkers) {
  h2o::ThreadPool pool(3);
  std::atomic<long> sum{0};
  for (int job = 0; job < 2000; ++job) {
    if (job % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let workers fall asleep
    pool.parallel_for(64, 4, [&](int begin, int end) {
      for (int i = begin; i < end; ++i) sum += i;
    });
  }
  EXPECT_EQ(sum.load(), 2000L * (63 * 64 / 2));
}

namespace {

// The threads of this process, by their kernel ids.
std::set<pid_t> process_threads() {
  std::set<pid_t> ids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task"))
    ids.insert(pid_t(std::stol(task.path().filename().string())));
  return ids;
}

std::atomic<bool> g_held{false}, g_release{false};
void hold_thread(int) {  // runs on the signalled thread: it stands still, as if descheduled
  g_held = true;
  while (!g_release) {
  }
}

}  // namespace

// Reliability round 4: a worker the system does not run (another program
// holds its core) must not hold up jobs it has taken no part of. Here a
// signal handler holds the pool's worker; every job is done by the calling
// thread meanwhile. Before, each job waited for every worker to check in:
// the jobs stood still until a watchdog released the worker after 5 s.
TEST(ThreadPool, AJobNeverWaitsForAWorkerThatTookNoChunk) {
  const std::set<pid_t> before = process_threads();
  h2o::ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the worker is waiting for a job
  pid_t worker = 0;
  for (pid_t id : process_threads())
    if (!before.contains(id)) worker = id;
  ASSERT_NE(worker, 0);
  struct sigaction action = {}, old = {};
  action.sa_handler = hold_thread;
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  g_held = false, g_release = false;
  ASSERT_EQ(syscall(SYS_tgkill, getpid(), worker, SIGUSR1), 0);
  while (!g_held) std::this_thread::yield();

  std::atomic<bool> watchdog_fired{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 500 && !g_release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    watchdog_fired = !g_release.exchange(true);
  });
  std::atomic<long> sum{0};
  for (int job = 0; job < 200; ++job)
    pool.parallel_for(64, 4, [&](int begin, int end) {
      for (int i = begin; i < end; ++i) sum += i;
    });
  g_release = true;
  watchdog.join();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_FALSE(watchdog_fired) << "the jobs waited for the held worker";
  EXPECT_EQ(sum.load(), 200L * (63 * 64 / 2));
  // Released, the worker takes part again.
  std::atomic<int> count{0};
  pool.parallel_for(4096, 1, [&](int begin, int end) { count += end - begin; });
  EXPECT_EQ(count.load(), 4096);
}

// A job posted the moment a pool is built, before its workers have run a
// single instruction, must still be picked up (this once hung forever).
TEST(ThreadPool, JobPostedBeforeWorkersStartIsNotMissed) {
  for (int round = 0; round < 300; ++round) {
    h2o::ThreadPool pool(4);
    std::atomic<int> count{0};
    pool.parallel_for(64, 1, [&](int begin, int end) { count += end - begin; });
    ASSERT_EQ(count.load(), 64) << "round " << round;
  }
}

// A thread the system refuses (here: no address space left for its stack) is
// one Error naming --threads, with the threads already started stopped; never
// std::terminate from a joinable std::thread destroyed unjoined.
TEST(ThreadPool, RefusedThreadIsAnErrorNamingTheFlag) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t now = rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE));
    const rlimit limit{now + (rlim_t(4) << 20), now + (rlim_t(4) << 20)};  // room for 4 MiB: not one 8 MiB stack
    ::setrlimit(RLIMIT_AS, &limit);
    try {
      h2o::ThreadPool pool(64);  // more than glibc's cache of freed stacks (40 MiB) can start without new memory
    } catch (const h2o::Error& e) {
      const std::string text = e.what();
      const bool named = text.rfind("--threads: 64 threads asked, the system refused to start more than ", 0) == 0;
      ::_exit(named && text.find("); ask for fewer") != std::string::npos ? 0 : 2);
    }
    ::_exit(3);  // started: the limit did not bite
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: another message, 3: no error";
}
