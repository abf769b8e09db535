// Recordings of every version replay: a version-2 file (JSON numbers) and a
// version-3 file (base64 payloads in the line), each copied by this build
// (version 4, payloads as bytes after the line), give the analyzer the same
// steps — probabilities as the 8-bit codes keep them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/studio/analyzer.h"
#include "core/studio/recording.h"
#include "core/studio/step_payload.h"
#include "tests/assets.h"

using namespace h2o;

namespace {
const std::string kCorpus = std::string(H2O_TEST_DATA) + "/../fuzz/corpus/recording/";

// Copies `old_path` with this build's writer and replays the copy against the steps read from it.
void expect_copy_replays_alike(const std::string& old_path, int old_version) {
  const auto dir = test::temp_dir("recording-versions");
  const std::string copy = (dir / "copy.h2orec.jsonl").string();
  std::vector<StepRecord> old_steps;
  {
    RecordingReader old(old_path);
    ASSERT_EQ(old.version(), old_version);
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
  // The copy is smaller than base64 text would make it: its payloads are bytes.
  if (old_version == 3) EXPECT_LT(std::filesystem::file_size(copy), std::filesystem::file_size(old_path));
}
}  // namespace

TEST(RecordingVersions, AVersion2FileAndItsCopyByThisBuildReplayTheSameSteps) {
  expect_copy_replays_alike(kCorpus + "tiny.h2orec.jsonl", 2);
}

TEST(RecordingVersions, AVersion3FileAndItsCopyByThisBuildReplayTheSameSteps) {
  expect_copy_replays_alike(kCorpus + "tiny-v3.h2orec.jsonl", 3);
}
