// core/base/format.h: the one way sizes, instants and flag lists are written and read.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/format.h"

using namespace h2o;

TEST(Format, MiBWithThreeDecimalsBelowOneAndOneAbove) {
  EXPECT_EQ(format_mib(880803), "0.840 MiB");
  EXPECT_EQ(format_mib(int64_t(18) << 20), "18.0 MiB");
  EXPECT_EQ(format_mib(int64_t(3) << 20, 2), "3.00 MiB");
}

TEST(Format, TimestampsAreUtc) {
  const std::time_t t = 1795435200;  // 2026-11-23T12:00:00Z
  EXPECT_EQ(utc_timestamp(t), "2026-11-23T12:00:00Z");
  EXPECT_EQ(file_stamp(t), "20261123-120000");
}

TEST(Format, ListsKeepTheNonEmptyItemsInOrder) {
  EXPECT_EQ(split_list("full,streaming,h2o"), (std::vector<std::string>{"full", "streaming", "h2o"}));
  EXPECT_EQ(split_list(",h2o,,tova,"), (std::vector<std::string>{"h2o", "tova"}));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_TRUE(split_list(",,").empty());
  EXPECT_EQ(split_list("one"), (std::vector<std::string>{"one"}));
}

// Flag values that a bare integer option would wrap or truncate: refused, naming the flag.
TEST(Format, FlagIntegersAreDigitsInRange) {
  EXPECT_EQ(parse_flag_uint("0", "--seed", UINT64_MAX), 0u);
  EXPECT_EQ(parse_flag_uint("18446744073709551615", "--seed", UINT64_MAX), UINT64_MAX);
  for (const char* bad : {"-1", "18446744073709551616", "99999999999999999999999", "", "1e3", " 1", "+1", "0x10"}) {
    try {
      parse_flag_uint(bad, "--seed", UINT64_MAX);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "--seed: must be an integer from 0 to 18446744073709551615, got '" +
                                           std::string(bad) + "'");
    }
  }
  EXPECT_THROW(parse_flag_uint("11", "--x", 10), Error);
  EXPECT_EQ(parse_flag_uint("10", "--x", 10), 10u);
}

TEST(Format, FlagIntegerListsNameTheirNoun) {
  EXPECT_EQ(parse_flag_ints("32,64,,128", "--budgets", "budget", 1, 1000), (std::vector<int>{32, 64, 128}));
  const auto message = [](const std::string& list) {
    try {
      parse_flag_ints(list, "--budgets", "budget", 1, 16777216);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("99999999999"), "--budgets: budget 99999999999 is above 16777216");
  EXPECT_EQ(message("16777217"), "--budgets: budget 16777217 is above 16777216");
  EXPECT_EQ(message("0"), "--budgets: budget 0 is below 1");
  EXPECT_EQ(message("-5"), "--budgets: budget -5 is below 1");
  EXPECT_EQ(message("32,big"), "--budgets: 'big' is not a budget (expected integers)");
  EXPECT_EQ(message(","), "--budgets: no budget given");
}
