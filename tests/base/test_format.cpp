// core/base/format.h: the one way sizes, instants and flag lists are written and read.
#include <gtest/gtest.h>

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
