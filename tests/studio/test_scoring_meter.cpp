// ScoringMeter: eval's per-session speed, peak KV and the stress test's
// measures at each length, fed hand-made step records.
#include <gtest/gtest.h>

#include <cmath>

#include "core/studio/scoring_meter.h"

using namespace h2o;

namespace {

// One forced step: session `session` fed one token in `ms`, holding `live` KV bytes, scoring `nll`.
SessionRecord fed_one(int session, double ms, int64_t live, double nll) {
  SessionRecord s;
  s.session = session;
  s.fed = {7};
  s.step_ms = ms;
  s.live_bytes = live;
  s.allocated_bytes = live + 100;
  s.nll = {nll};
  return s;
}

}  // namespace

TEST(ScoringMeter, TotalsAndPeaks) {
  ScoringMeter meter(1, {});
  for (int64_t live : {100, 300, 200}) {
    StepRecord r;
    r.sessions = {fed_one(0, 500, live, std::log(4.0))};
    meter.write(r);
  }
  const SessionMeasure m = meter.total(0);
  EXPECT_EQ(m.fed, 3);
  EXPECT_EQ(m.scored, 3);
  EXPECT_DOUBLE_EQ(m.tokens_per_s(), 2.0);  // 3 tokens in 1.5 s
  EXPECT_NEAR(m.perplexity(), 4.0, 1e-12);
  EXPECT_EQ(m.peak_kv_live_bytes, 300);
  EXPECT_EQ(m.peak_kv_allocated_bytes, 400);
}

TEST(ScoringMeter, ALengthOfNTokensIsReachedWithItsNMinusFirstPrediction) {
  ScoringMeter meter(2, {3, 5});
  // Session 0: NLL log 2 for two predictions, then log 8 for two: perplexity 2 at N = 3 (2 predictions),
  // 2^((1+1+3+3)/4) = 4 at N = 5.
  // Session 1 stops after two steps.
  const double nll[] = {std::log(2.0), std::log(2.0), std::log(8.0), std::log(8.0)};
  for (int step = 0; step < 4; ++step) {
    StepRecord r;
    r.sessions.push_back(fed_one(0, 1, 10, nll[step]));
    if (step < 2) r.sessions.push_back(fed_one(1, 1, 10, nll[step]));
    meter.write(r);
  }
  ASSERT_TRUE(meter.at_length(0, 0));
  EXPECT_EQ(meter.at_length(0, 0)->scored, 2);
  EXPECT_NEAR(meter.at_length(0, 0)->perplexity(), 2.0, 1e-12);
  EXPECT_GT(meter.at_length(0, 0)->process_peak_rss_bytes, 0);
  ASSERT_TRUE(meter.at_length(0, 1));
  EXPECT_NEAR(meter.at_length(0, 1)->perplexity(), std::pow(2.0, 2.0), 1e-12);
  EXPECT_TRUE(meter.at_length(1, 0));
  EXPECT_FALSE(meter.at_length(1, 1));
  // 4 over 2 is above 1.5 times: broken. A session that stopped short has no verdict.
  EXPECT_EQ(length_verdict({meter.at_length(0, 0), meter.at_length(0, 1)}), "broken past the trained context");
  EXPECT_EQ(length_verdict({meter.at_length(1, 0), meter.at_length(1, 1)}), "did not reach every length");
}

TEST(ScoringMeter, VerdictStableWithinOneAndAHalfTimesTheFirst) {
  const auto at = [](double perplexity) {
    SessionMeasure m;
    m.scored = 1;
    m.nll_sum = std::log(perplexity);
    return std::optional<SessionMeasure>(m);
  };
  EXPECT_EQ(length_verdict({at(100), at(150), at(60)}), "stable");  // exactly 1.5x, and lower, are stable
  EXPECT_EQ(length_verdict({at(100), at(151)}), "broken past the trained context");
  EXPECT_EQ(length_verdict({std::nullopt, at(100)}), "not measured");
}
