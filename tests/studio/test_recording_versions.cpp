// Recordings of every version replay: a version-2 file (JSON numbers) and
// the same steps written by this build (version 3, compressed payloads) give
// the analyzer the same steps — probabilities as the 8-bit codes keep them.
#include <gtest/gtest.h>

#include <cmath>

#include "core/base/json_text.h"
#include "core/studio/analyzer.h"
#include "core/studio/recording.h"
#include "core/studio/step_payload.h"
#include "tests/assets.h"

using namespace h2o;

namespace {
const std::string kVersion2 = std::string(H2O_TEST_DATA) + "/../fuzz/corpus/recording/tiny.h2orec.jsonl";
}

TEST(RecordingVersions, AVersion2FileAndItsVersion3CopyReplayTheSameSteps) {
  const auto dir = test::temp_dir("recording-versions");
  const std::string copy = (dir / "tiny-v3.h2orec.jsonl").string();
  std::vector<StepRecord> old_steps;
  {
    RecordingReader old(kVersion2);
    ASSERT_EQ(old.version(), 2);
    RecordingWriter writer(copy, old.header());
    while (auto r = old.next()) {
      round_to_recorded(*r);
      writer.write(*r);
      old_steps.push_back(*r);
    }
  }
  ASSERT_GT(old_steps.size(), 2u);
  RecordingReader fresh(copy);
  EXPECT_EQ(fresh.version(), kRecordingVersion);
  Analyzer a(fresh.header());
  size_t i = 0;
  while (auto r = fresh.next()) {
    ASSERT_LT(i, old_steps.size());
    const StepRecord& o = old_steps[i++];
    EXPECT_EQ(recording_step_line(*r), recording_step_line(o)) << "step " << r->step;
    ASSERT_EQ(r->sessions.size(), o.sessions.size());
    for (size_t s = 0; s < o.sessions.size(); ++s) {
      EXPECT_EQ(r->sessions[s].evictions, o.sessions[s].evictions);
      ASSERT_EQ(r->sessions[s].attention.size(), o.sessions[s].attention.size());
      for (size_t c = 0; c < o.sessions[s].attention.size(); ++c) {
        EXPECT_EQ(r->sessions[s].attention[c].probs, o.sessions[s].attention[c].probs);
        EXPECT_EQ(r->sessions[s].attention[c].key_positions, o.sessions[s].attention[c].key_positions);
      }
    }
    a.ingest(*r);
  }
  EXPECT_EQ(i, old_steps.size());
  EXPECT_EQ(a.steps_ingested(), int64_t(old_steps.size()));
}
