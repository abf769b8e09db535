// The run's flags declared once (core/flags/run_flags.h): the bounds every
// front end checks with, the help each shows, and settings kept within them.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/base/error.h"
#include "core/flags/run_flags.h"
#include "core/policy/policy.h"
#include "core/studio/studio_setup.h"

using namespace h2o;

TEST(RunFlags, AValueIsCheckedAgainstItsBoundsOrChoicesInOneLine) {
  const RunFlag& budget = run_flag("budget");
  EXPECT_EQ(flag_problem(budget, "64"), "");
  EXPECT_EQ(flag_problem(budget, "1"), "");
  EXPECT_EQ(flag_problem(budget, "0"), "expected a whole number from 1 to 16777216, got '0'");
  EXPECT_EQ(flag_problem(budget, "64k"), "expected a whole number from 1 to 16777216, got '64k'");
  EXPECT_EQ(flag_problem(budget, ""), "expected a whole number from 1 to 16777216, got ''");
  EXPECT_EQ(flag_problem(budget, "16777217"),
            "16777217 is more than the tokens a KV head may hold, 16777216 (1 to 16777216)");
  EXPECT_EQ(flag_int(budget, "1024"), 1024);
  try {
    flag_int(budget, "-3");
    FAIL() << "a budget of -3 was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--budget: expected a whole number from 1 to 16777216, got '-3'");
  }
  const RunFlag& backend = run_flag("backend");
  EXPECT_EQ(flag_choice(backend, "cuda-sim"), "cuda-sim");
  EXPECT_EQ(flag_problem(backend, "tpu"), "expected cpu|cuda|cuda-sim, got 'tpu'");
  EXPECT_EQ(flag_problem(run_flag("model"), "anything"), "");  // a path is the loader's to check
  EXPECT_THROW(run_flag("no-such-flag"), std::logic_error);
}

TEST(RunFlags, HelpStatesBoundsAndEachFrontEndsDefaultWithItsReason) {
  const RunFlag& budget = run_flag("budget");
  EXPECT_EQ(flag_help(budget, kCliRun),
            "tokens per KV head for every policy that evicts; the parameters not given split it (1 to 16777216; "
            "default: each policy's parameters' defaults, 64 in all)");
  EXPECT_NE(flag_help(budget, kApp).find("default: 64 — a small cache"), std::string::npos) << flag_help(budget, kApp);
  EXPECT_NE(flag_help(run_flag("backend"), kApp).find("(cpu|cuda|cuda-sim; default: cpu)"), std::string::npos);
  // h2o-cli info takes the same backends; only its default (none) and what a given one does differ.
  EXPECT_NE(flag_help(run_flag("backend"), kCliInfo).find("(cpu|cuda|cuda-sim; default: none, the files alone — given, info also makes"),
            std::string::npos)
      << flag_help(run_flag("backend"), kCliInfo);
  // Every flag is someone's, every policy parameter is a flag, and a differing default says why or stands alone.
  for (const RunFlag& f : run_flags()) {
    EXPECT_NE(f.takers, 0u) << f.name;
    if (f.kind == FlagKind::Int) {
      EXPECT_LE(f.lo, f.hi) << f.name;
    }
    for (const RunFlag::Default& d : f.defaults) EXPECT_TRUE(f.taken_by(d.taker)) << f.name;
  }
  for (const PolicyFlag& p : policy_flags()) EXPECT_TRUE(run_flag(p.name).taken_by(kCliRun)) << p.name;
}

TEST(RunFlags, SettingsOutsideTheBoundsGoBackToTheDefaultsAndNotGivenStays) {
  const StudioConfig defaults;
  StudioConfig c;
  c.budget = 0;
  c.threads = 1 << 30;
  c.kv_limit_mib = -5;
  c.slack = -1;      // the backend's own: stays
  c.kv_group = 0;    // shaped for the model: stays
  c.kv_residual = 5000000;
  c.params["sinks"] = -2;
  c.params["heavy"] = 7;
  keep_in_bounds(c, defaults);
  EXPECT_EQ(c.budget, defaults.budget);
  EXPECT_EQ(c.threads, defaults.threads);
  EXPECT_EQ(c.kv_limit_mib, defaults.kv_limit_mib);
  EXPECT_EQ(c.slack, -1);
  EXPECT_EQ(c.kv_group, 0);
  EXPECT_EQ(c.kv_residual, defaults.kv_residual);
  EXPECT_EQ(c.params["sinks"], defaults.params.at("sinks"));
  EXPECT_EQ(c.params["heavy"], 7);
  c.slack = -7;
  keep_in_bounds(c, defaults);
  EXPECT_EQ(c.slack, defaults.slack);
}
