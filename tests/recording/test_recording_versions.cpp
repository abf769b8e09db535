// Recordings of every version replay: a version-1 file (one capture and one
// state a session, evictions as one list, no stream positions), a version-2 file (JSON numbers) and a
// version-3 file (base64 payloads in the line), each copied by this build
// (version 4, payloads as bytes after the line), give the analyzer the same
// steps — probabilities as the 8-bit codes keep them. A ring's file (a
// checkpoint, then the newest steps) replays to what the whole file shows.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/analysis/analyzer.h"
#include "core/recording/recording.h"
#include "core/recording/step_payload.h"
#include "tests/assets.h"
#include "tests/studio/same_pane.h"

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
  if (old_version == 3) {
    EXPECT_LT(std::filesystem::file_size(copy), std::filesystem::file_size(old_path));
  }
}
}  // namespace

// Version 1 as its writer (43274ad^, core/studio_record.cpp) laid it out: keys sorted, the policies
// with every parameter of every kind. It recorded no position: -1, "not recorded", which round 4's
// check of negative positions refused ("session 0: position -1 out of range").
TEST(RecordingVersions, AVersion1FileAndItsCopyByThisBuildReplayTheSameSteps) {
  expect_copy_replays_alike(kCorpus + "tiny-v1.h2orec.jsonl", 1);
  RecordingReader v1(kCorpus + "tiny-v1.h2orec.jsonl");
  const auto first = v1.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->sessions[0].position, -1);
  EXPECT_EQ(first->sessions[0].layer_states.size(), 1u);
}

TEST(RecordingVersions, AVersion2FileAndItsCopyByThisBuildReplayTheSameSteps) {
  expect_copy_replays_alike(kCorpus + "tiny.h2orec.jsonl", 2);
}

TEST(RecordingVersions, AVersion3FileAndItsCopyByThisBuildReplayTheSameSteps) {
  expect_copy_replays_alike(kCorpus + "tiny-v3.h2orec.jsonl", 3);
}

namespace {

// The analyzer after replaying `path` whole: from its checkpoint, if it has one.
std::unique_ptr<Analyzer> replayed(const std::string& path) {
  RecordingReader reader(path);
  auto analyzer = replay_analyzer(reader);
  while (auto r = reader.next()) analyzer->ingest(*r);
  return analyzer;
}

void expect_same_panes(const Analyzer& a, const Analyzer& b, const std::string& what) {
  ASSERT_EQ(a.latest_step(), b.latest_step()) << what;
  for (int64_t step : {a.latest_step(), int64_t(1)}) {
    ViewSelection view;
    view.step = step;
    const StudioSnapshot x = a.snapshot(view), y = b.snapshot(view);
    ASSERT_EQ(x.panes.size(), y.panes.size()) << what;
    for (size_t p = 0; p < x.panes.size(); ++p)
      test::expect_same_pane(x.panes[p], y.panes[p], what + ", step " + std::to_string(step) + ", pane " + std::to_string(p));
  }
}

}  // namespace

// A small spool of the version-4 corpus file keeps its newest steps and a
// checkpoint: never past its limit, and its replay shows what the whole file
// shows. The corpus's ring file (the fuzz seed, made so) replays alike.
TEST(RecordingVersions, ARingKeepsTheNewestStepsAndReplaysToWhatTheWholeFileShows) {
  const auto dir = test::temp_dir("recording-ring");
  const std::string path = (dir / "tiny-ring.h2orec.jsonl").string();
  constexpr int64_t kLimit = 3600;
  RecordingReader whole(kCorpus + "tiny-v4.h2orec.jsonl");
  Analyzer live(whole.header());
  {
    RecordingWriter ring(path, whole.header(), kLimit);
    ring.keep_newest([&](std::ostream& out) { live.save_checkpoint(out); });
    while (auto r = whole.next()) {
      ring.write(*r);
      live.ingest(*r);
      EXPECT_LE(std::filesystem::file_size(path), size_t(kLimit));
    }
    EXPECT_FALSE(ring.stopped()) << ring.stop_reason();
    EXPECT_GE(ring.turns(), 1);
    EXPECT_GT(ring.first_step(), 0);
    EXPECT_EQ(ring.last_step(), live.latest_step());
  }
  RecordingReader back(path);
  EXPECT_GE(back.checkpoint_step(), 0);
  expect_same_panes(live, *replayed(path), "the ring just written");
  expect_same_panes(live, *replayed(kCorpus + "tiny-ring.h2orec.jsonl"), "the corpus's ring file");
  EXPECT_EQ(count_recorded_steps(path), live.latest_step() - back.checkpoint_step());
}
