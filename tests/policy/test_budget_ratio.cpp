// Budgets as fractions (SEMANTICS.md "Budgets as fractions"): the arithmetic
// of each ratio, the sinks default that goes with H2O's two ratios, and the
// one-line errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/base/error.h"
#include "core/policy/budget_ratio.h"

#include "tests/error_helpers.h"

using namespace h2o;
using h2o::test::error_of;

TEST(BudgetRatio, HeavyAndRecentAreFloorsOfTheLengthWithNoSinks) {
  BudgetRatios r;
  r.heavy = 0.1;
  r.recent = 0.1;
  const PolicyConfig p = make_policy("h2o", apply_ratios({}, r, 1000));
  EXPECT_EQ(p.get("sinks"), 0);
  EXPECT_EQ(p.get("heavy"), 100);
  EXPECT_EQ(p.get("recent"), 100);
  EXPECT_EQ(p.budget(), 200);
  // floor(0.1 * 999) = 99; recent never below 1.
  r.recent = 0.0001;
  const PolicyConfig q = make_policy("h2o", apply_ratios({}, r, 999));
  EXPECT_EQ(q.get("heavy"), 99);
  EXPECT_EQ(q.get("recent"), 1);
}

TEST(BudgetRatio, GivenSinksStay) {
  BudgetRatios r;
  r.heavy = 0.2;
  r.recent = 0.2;
  PolicySettings s;
  s.given["sinks"] = 4;
  const PolicyConfig p = make_policy("h2o", apply_ratios(s, r, 100));
  EXPECT_EQ(p.get("sinks"), 4);
  EXPECT_EQ(p.budget(), 44);
}

TEST(BudgetRatio, BudgetRatioIsSplitAsABudgetForEveryEvictingKind) {
  BudgetRatios r;
  r.budget = 0.25;
  for (const char* kind : {"streaming", "h2o", "tova"}) {
    SCOPED_TRACE(kind);
    PolicySettings absolute;
    absolute.budget = 64;
    EXPECT_EQ(make_policy(kind, apply_ratios({}, r, 257)), make_policy(kind, absolute));
  }
}

TEST(BudgetRatio, RatiosOutsideZeroToOneAndTwoSizingsAreOneLineNamingTheFlag) {
  auto with = [](std::optional<double> BudgetRatios::*field, double v) {
    BudgetRatios r;
    r.*field = v;
    return error_of([&] { validate_ratios(r); });
  };
  EXPECT_EQ(with(&BudgetRatios::heavy, 0.0), "--heavy-ratio: must be a fraction of the input in (0, 1], got 0");
  EXPECT_EQ(with(&BudgetRatios::recent, 1.5), "--recent-ratio: must be a fraction of the input in (0, 1], got 1.5");
  EXPECT_EQ(with(&BudgetRatios::budget, -0.1), "--budget-ratio: must be a fraction of the input in (0, 1], got -0.1");
  EXPECT_NE(with(&BudgetRatios::budget, std::numeric_limits<double>::quiet_NaN()), "");
  BudgetRatios whole;
  whole.budget = 1.0;
  EXPECT_NO_THROW(validate_ratios(whole));
  BudgetRatios both;
  both.budget = 0.5;
  both.heavy = 0.1;
  EXPECT_EQ(error_of([&] { validate_ratios(both); }).rfind("--budget-ratio: give it or --heavy-ratio", 0), 0u);
  BudgetRatios tiny;
  tiny.budget = 0.001;
  EXPECT_EQ(error_of([&] { apply_ratios({}, tiny, 100); }),
            "--budget-ratio: 0.001 of 100 tokens is a budget of 0 tokens (give a larger ratio)");
}

TEST(BudgetRatio, NoRatiosLeaveTheSettingsAlone) {
  PolicySettings s;
  s.budget = 32;
  s.given["sinks"] = 2;
  const PolicySettings out = apply_ratios(s, {}, 1000);
  EXPECT_EQ(out.budget, s.budget);
  EXPECT_EQ(out.given, s.given);
}
