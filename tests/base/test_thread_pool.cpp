// The CPU backend's fork-join pool: every index exactly once, any grain, any
// number of threads, many jobs in a row (workers sleeping between some).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
