// The app's settings to engine (core/studio/studio_setup.h) and its report (report.h).
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/studio/report.h"
#include "core/studio/studio_setup.h"

using namespace h2o;

TEST(StudioSetup, SplitsOneBudgetIntoThreePolicies) {
  StudioConfig c;
  c.budget = 64;
  c.params["sinks"] = 4;
  const auto p = studio_policies(c);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name(), "full");
  EXPECT_EQ(p[1].get("window"), 60);
  EXPECT_EQ(p[2].get("heavy") + p[2].get("recent"), 60);
  c.params["heavy"] = 10;
  EXPECT_EQ(studio_policies(c)[2].get("recent"), 50);
  c.params["heavy"] = 70;
  EXPECT_THROW(studio_policies(c), Error);
  c.params["heavy"] = 0;
  c.params["sinks"] = 64;
  EXPECT_THROW(studio_policies(c), Error);
  // Any 1 to 4 kinds, in the order chosen.
  c.params["sinks"] = 4;
  c.policies = {"tova", "h2o"};
  const auto two = studio_policies(c);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].describe(), "tova(sinks=4,window=60)");
  c.policies = {"full", "streaming", "h2o", "tova", "full"};
  EXPECT_THROW(studio_policies(c), Error);
  c.policies = {"lru"};
  EXPECT_THROW(studio_policies(c), Error);
}

// Slack "auto" (-1, the default) is the backend's: exact on the CPU, kDeviceSlack on a GPU; a number
// given is kept on either.
TEST(StudioSetup, AutoSlackIsTheBackendsDefault) {
  EXPECT_EQ(default_slack("cpu"), 0);
  EXPECT_EQ(default_slack("cuda"), kDeviceSlack);
  EXPECT_EQ(default_slack("cuda-sim"), kDeviceSlack);
  // A device reads the weights once a step for every pane; the CPU times each pane alone.
  EXPECT_FALSE(batched_by_default("cpu"));
  EXPECT_TRUE(batched_by_default("cuda"));
  EXPECT_TRUE(batched_by_default("cuda-sim"));
  StudioConfig c;
  EXPECT_EQ(c.slack, -1);
  c.policies = {"full", "h2o"};
  EXPECT_EQ(studio_policies(c)[1].slack, 0);
  c.backend = "cuda";
  EXPECT_EQ(studio_policies(c)[1].slack, kDeviceSlack);
  EXPECT_NE(studio_policies(c)[1].describe().find("slack=" + std::to_string(kDeviceSlack)), std::string::npos);
  c.slack = 0;
  EXPECT_EQ(studio_policies(c)[0].slack, 0);
  EXPECT_TRUE(studio_engine_options(c).batched);
  c.backend = "cpu";
  EXPECT_FALSE(studio_engine_options(c).batched);
}

TEST(Report, SummaryNamesPoliciesPlotsAndLogs) {
  ReportContents r;
  r.manifest = {{"model", {{"path", "m.bin"}, {"format", "llama2c"}, {"n_layers", 4}}}, {"started", "2026-11-23T16:00:00Z"}};
  r.written = "2026-11-23T16:05:00Z";
  r.totals = nlohmann::json::array({{{"policy", "h2o(sinks=4,heavy=30,recent=30)"}, {"generated_tokens", 5}}});
  r.steps = 12;
  r.plots = {"kv-memory.png", "kv-memory.svg"};
  r.logs = {"steps.csv"};
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("h2o(sinks=4,heavy=30,recent=30)"), std::string::npos);
  EXPECT_NE(md.find("![kv-memory.png](kv-memory.png)"), std::string::npos);
  EXPECT_NE(md.find("[kv-memory.svg](kv-memory.svg)"), std::string::npos);
  EXPECT_NE(md.find("[steps.csv](steps.csv)"), std::string::npos);
  EXPECT_NE(md.find("**Steps**: 12"), std::string::npos);
  // The run's start as the manifest has it, and the report's own instant.
  EXPECT_NE(md.find("**Run started**: 2026-11-23T16:00:00Z"), std::string::npos);
  EXPECT_NE(md.find("**Report written**: 2026-11-23T16:05:00Z"), std::string::npos);
}

// Each pane's stream has its own answers: a click names the token of the pane clicked, and says what the others hold there.
