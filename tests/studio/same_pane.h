#pragma once
// What two runs' panes must share when both hold the same whole history:
// numbers, text and fates, the rasters (not the attention, which depends on
// the captures each kept). For tests that compare a run with another way to
// the same steps (sinks beside the engine, thinned, a ring's replay).
#include <gtest/gtest.h>

#include <string>

#include "core/analysis/snapshot.h"

namespace h2o::test {

inline void expect_same_pane(const PaneSnapshot& a, const PaneSnapshot& b, const std::string& where) {
  EXPECT_EQ(a.cached_tokens, b.cached_tokens) << where;
  EXPECT_EQ(a.live_bytes, b.live_bytes) << where;
  EXPECT_EQ(a.stream_length, b.stream_length) << where;
  EXPECT_EQ(a.generated, b.generated) << where;
  ASSERT_EQ(a.tokens.size(), b.tokens.size()) << where;
  for (size_t t = 0; t < a.tokens.size(); ++t) {
    EXPECT_EQ(a.tokens[t].position, b.tokens[t].position) << where;
    EXPECT_EQ(a.tokens[t].text, b.tokens[t].text) << where;
    EXPECT_EQ(int(a.tokens[t].fate), int(b.tokens[t].fate)) << where;
  }
  EXPECT_EQ(a.overview.cells, b.overview.cells) << where;
  EXPECT_EQ(a.detail.cells, b.detail.cells) << where;
}

}  // namespace h2o::test
