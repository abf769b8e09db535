// Seed 004's configuration names: what each stands for, and the one-line
// errors of names that do not parse or leave no room.
#include <gtest/gtest.h>


#include "core/base/error.h"
#include "core/policy/config_name.h"

#include "tests/error_helpers.h"

using namespace h2o;
using h2o::test::error_of;

TEST(ConfigName, TheSeedsFourConfigurations) {
  EXPECT_EQ(policy_from_config_name("baseline", 0, false).describe(), "full");
  EXPECT_EQ(policy_from_config_name("streaming_8_256", 0, false).describe(), "streaming(sinks=8,window=248)");
  EXPECT_EQ(policy_from_config_name("h2o_8_32_256", 0, false).describe(), "h2o(sinks=8,heavy=216,recent=32)");
  EXPECT_EQ(policy_from_config_name("h2o_8_64_512", 0, false).describe(), "h2o(sinks=8,heavy=440,recent=64)");
  EXPECT_EQ(policy_from_config_name("tova_4_64", 0, false).describe(), "tova(sinks=4,window=60)");
  const PolicyConfig rolled = policy_from_config_name("h2o_0_16_64", 16, true);
  EXPECT_EQ(rolled.budget(), 64);
  EXPECT_EQ(rolled.slack, 16);
  EXPECT_TRUE(rolled.rolling);
}

TEST(ConfigName, BadNamesAreOneLineNamingTheFlagAndTheName) {
  EXPECT_EQ(error_of([] { policy_from_config_name("lru_8_256", 0, false); }).rfind("--configs: 'lru_8_256' is not", 0),
            0u);
  EXPECT_EQ(error_of([] { policy_from_config_name("h2o_8_256", 0, false); }).rfind("--configs: 'h2o_8_256' is not", 0),
            0u);
  EXPECT_EQ(error_of([] { policy_from_config_name("streaming_8_x", 0, false); })
                .rfind("--configs: 'streaming_8_x': its capacity 'x' is not a whole number", 0),
            0u);
  EXPECT_NE(error_of([] { policy_from_config_name("streaming_-1_8", 0, false); }).find("'-1' is not a whole number"),
            std::string::npos);
  EXPECT_EQ(error_of([] { policy_from_config_name("h2o_8_248_256", 0, false); }),
            "--configs: 'h2o_8_248_256': the capacity 256 leaves no room beside 8 sinks and 248 recent");
  EXPECT_EQ(error_of([] { policy_from_config_name("tova_8_8", 0, false); }),
            "--configs: 'tova_8_8': the capacity 8 leaves no room beside 8 sinks");
}
