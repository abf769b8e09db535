#include "core/base/system_limits.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace h2o {

int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t(1) << 30;
  return int64_t(pages) * int64_t(page);
}

int hardware_threads() {
  // Threads beyond the CPUs allowed only take turns on them, and every fork-join waits for the slowest.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

int max_threads() { return kThreadsPerCore * hardware_threads(); }

}  // namespace h2o
