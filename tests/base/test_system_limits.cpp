// The CPUs a process may use are its affinity's, not the machine's: under
// `taskset -c 0` the default thread count is 1 and --threads is bounded by it
// (before, two threads shared the one CPU: decode ~17x slower).
#include <gtest/gtest.h>

#include <sched.h>

#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/system_limits.h"
#include "core/model/model.h"

using namespace h2o;

namespace {

// Runs `body` with this thread bound to its first allowed CPU, then restores the affinity.
template <class Body>
void on_one_cpu(Body body) {
  cpu_set_t before, one;
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  body();
  ASSERT_EQ(::sched_setaffinity(0, sizeof before, &before), 0);
}

}  // namespace

TEST(SystemLimits, TheDefaultThreadsAreTheCpusTheAffinityAllows) {
  const int all = hardware_threads();
  EXPECT_GE(all, 1);
  on_one_cpu([] {
    EXPECT_EQ(hardware_threads(), 1);
    EXPECT_EQ(max_threads(), kThreadsPerCore);
    const auto model = make_synthetic({"stories260K", 1, DType::F32, 0, 0});
    BackendOptions o;
    o.kind = "cpu";
    EXPECT_NE(make_backend(model, o)->describe().find("1 thread"), std::string::npos);  // --threads 0
    o.threads = kThreadsPerCore + 1;
    try {
      make_backend(model, o);
      ADD_FAILURE() << "--threads " << o.threads << " accepted on one CPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--threads"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("(1)"), std::string::npos) << e.what();
    }
  });
  EXPECT_EQ(hardware_threads(), all);
}
