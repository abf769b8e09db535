// The app's needle (docs/STUDIO.md, "The needle"): planted into every pane's
// stream as it is, watched in the analyzer from the evictions it keeps
// anyway, asked for from forks of the live caches; recorded and replayed
// exactly, and asks leave the live stream as it would have been.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/analysis/needle_watch.h"
#include "core/base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/recording/step_line.h"
#include "core/studio/needle_source.h"
#include "core/studio/report.h"
#include "core/studio/run_log.h"
#include "core/studio/studio_run.h"
#include "tests/assets.h"
#include "tests/studio/small_studio_config.h"

using namespace h2o;

namespace {

StudioConfig needle_config() {
  StudioConfig c = test::small_studio_config();
  c.policies = {"full", "streaming", "h2o"};
  return c;
}

constexpr const char* kNeedle = "The secret word is Bethlehem.";

std::unique_ptr<StudioRun> live_run(const StudioInputs& in, const std::string& spool) {
  ViewSelection view;
  view.layer = 1;
  return StudioRun::live(needle_config(), in, make_cpu_backend(in.model, 1), view, spool, 0);
}

void steps(StudioRun& run, int n) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(run.step().stepped);
}

}  // namespace

TEST(NeedleQuestion, IsAskedBackFromTheXIsY) {
  const auto q = question_of_needle("The secret word is Bethlehem.");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->question, "What is the secret word? The secret word is");
  EXPECT_EQ(q->answer, "Bethlehem");
  EXPECT_EQ(question_of_needle("My PIN is 7421")->question, "What is my PIN? My PIN is");
  EXPECT_FALSE(question_of_needle("Remember Bethlehem."));
}

TEST(EnginePlant, TheNeedleGoesIntoEveryStreamAsItIsAndIsNotAnswered) {
  const StudioConfig c = needle_config();
  const StudioInputs in = load_studio_inputs(c);
  auto engine = make_studio_engine(c, in, make_cpu_backend(in.model, 1));
  engine->step();
  const std::vector<int> ids = {100, 101, 102, 103};
  engine->plant(ids);
  std::vector<int64_t> begin(3, -1);
  for (int i = 0; i < 200 && begin[0] < 0; ++i) {
    const StepRecord r = engine->step();
    for (const SessionRecord& s : r.sessions)
      if (s.needle_begin >= 0) {
        begin[size_t(s.session)] = s.needle_begin;
        EXPECT_EQ(s.needle_end, s.needle_begin + 4);
        EXPECT_EQ(r.prompt_index, -1);
        EXPECT_EQ(s.token, -1) << "no answer is chosen after a needle";
      }
  }
  ASSERT_GE(begin[0], 0) << "the needle never went in";
  const StepRecord next = engine->step();
  EXPECT_TRUE(next.turn_start) << "the next turn follows the needle";
  EXPECT_EQ(next.prompt_index, 1);
  for (size_t s = 0; s < 3; ++s) {
    const std::vector<int>& stream = engine->sessions()[s]->stream();
    ASSERT_GE(begin[s], 0);
    EXPECT_EQ(std::vector<int>(stream.begin() + begin[s], stream.begin() + begin[s] + 4), ids) << "session " << s;
  }
  EXPECT_THROW(engine->plant({}), Error);
}

TEST(StudioNeedle, PanesWatchTheNeedleAskForItAndAReplayShowsTheSame) {
  const auto dir = test::temp_dir("studio-needle");
  const StudioInputs in = load_studio_inputs(needle_config());
  auto run = live_run(in, (dir / "spool.jsonl").string());
  EXPECT_THROW(run->ask_after_next_step(), Error) << "nothing to ask for yet";
  steps(*run, 4);
  EXPECT_NE(run->plant_needle(kNeedle).find("What is the secret word?"), std::string::npos);
  steps(*run, 70);
  run->ask_after_next_step();
  steps(*run, 1);
  const int64_t asked = run->latest_step();
  steps(*run, 3);
  const StudioSnapshot live = run->snapshot(ViewSelection{});
  ASSERT_TRUE(live.needle.planted);
  EXPECT_EQ(live.needle.question, "What is the secret word? The secret word is");
  ASSERT_EQ(live.needle.panes.size(), 3u);
  const NeedlePane& full = live.needle.panes[0];
  EXPECT_EQ(full.end - full.begin, int64_t(in.tokenizer->encode(kNeedle).size()));
  EXPECT_DOUBLE_EQ(full.survival, 1.0) << "the full cache keeps everything";
  EXPECT_EQ(full.lost_step, -1);
  // StreamingLLM's window (24 - 2 sinks) has long passed a needle of ~30 byte tokens.
  const NeedlePane& streaming = live.needle.panes[1];
  EXPECT_DOUBLE_EQ(streaming.survival, 0.0);
  EXPECT_GE(streaming.lost_step, 0);
  EXPECT_GT(streaming.lost_after, 0);
  for (const NeedlePane& pane : live.needle.panes) {
    ASSERT_EQ(pane.asks.size(), 1u);
    EXPECT_EQ(pane.asks[0].step, asked);
    EXPECT_TRUE(std::isfinite(pane.asks[0].answer_nll));
    EXPECT_GT(pane.asks[0].distance, 0);
    EXPECT_FALSE(pane.asks[0].said.empty());
    EXPECT_EQ(pane.held.size(), size_t(live.layers * live.kv_heads));
  }
  EXPECT_DOUBLE_EQ(live.needle.panes[0].asks[0].survival_answer, 1.0);
  bool marked = false;
  for (const TokenCell& cell : live.panes[0].tokens) marked = marked || cell.needle;
  EXPECT_TRUE(marked) << "the needle's tokens are marked in the full pane's text";

  // The report says it in words.
  const RunExport exported = run->run_export("paused", ViewSelection{});
  ReportContents report;
  report.needle = exported.needle;
  const std::string md = report_markdown(report);
  EXPECT_NE(md.find("## The needle"), std::string::npos) << md;
  EXPECT_NE(md.find("StreamingLLM dropped the needle at step " + std::to_string(streaming.lost_step)), std::string::npos) << md;
  EXPECT_NE(md.find("Full cache holds all of the needle"), std::string::npos) << md;

  // The spool replays to the same pictures of the needle.
  const std::string saved = (dir / "saved.jsonl").string();
  exported.write_recording(saved);
  auto replay = StudioRun::replay(saved);
  replay->replay_opening(StudioConfig{});
  while (replay->step().stepped) {
  }
  const StudioSnapshot again = replay->snapshot(ViewSelection{});
  ASSERT_EQ(again.step, live.step);
  ASSERT_TRUE(again.needle.planted);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again.needle.panes[i].held, live.needle.panes[i].held);
    EXPECT_EQ(again.needle.panes[i].curve.y, live.needle.panes[i].curve.y);
    ASSERT_EQ(again.needle.panes[i].asks.size(), 1u);
    EXPECT_EQ(again.needle.panes[i].asks[0].answer_nll, live.needle.panes[i].asks[0].answer_nll);
    EXPECT_EQ(again.needle.panes[i].asks[0].said, live.needle.panes[i].asks[0].said);
  }
  std::filesystem::remove_all(dir);
}

namespace {

// steps.jsonl of a run of `n` steps with the needle planted at step 3, asked every `ask_every` steps (0: never),
// without the fields that time it.
std::vector<nlohmann::json> logged_steps(const StudioInputs& in, int n, int ask_every, const std::filesystem::path& dir) {
  const StudioConfig c = needle_config();
  auto engine = make_studio_engine(c, in, make_cpu_backend(in.model, 1));
  EngineSource source(*engine);
  NeedleSource needle(*engine, source);
  needle.ask_every(ask_every);
  {
    RunInfo info;
    info.command = "stream";
    info.hash_files = false;
    RunLog log(dir.string(), *engine, info);
    RunLoop loop(needle);
    loop.add_sink(log);
    for (int i = 0; i < n; ++i) {
      if (i == 3) needle.plant(kNeedle);
      loop.step();
    }
    log.close();
  }
  std::vector<nlohmann::json> out;
  std::ifstream lines(dir / "steps.jsonl");
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (const char* timed : {"step_ms", "decode_tokens_per_s"}) j.erase(timed);
    out.push_back(j);
  }
  return out;
}

}  // namespace

TEST(StudioNeedle, AsksLeaveTheLiveStreamAsItWouldHaveBeen) {
  const auto dir = test::temp_dir("studio-needle-asks");
  const StudioInputs in = load_studio_inputs(needle_config());
  const auto with = logged_steps(in, 90, 7, dir / "with"), without = logged_steps(in, 90, 0, dir / "without");
  ASSERT_EQ(with.size(), without.size());
  for (size_t i = 0; i < with.size(); ++i) ASSERT_EQ(with[i], without[i]) << "line " << i + 1;
  std::filesystem::remove_all(dir);
}

TEST(StudioNeedle, ARecordedStepKeepsTheNeedleAndTheAsksAnswers) {
  StepRecord r;
  r.step = 7;
  r.phase = Phase::Prefill;
  SessionRecord s;
  s.fed = {1, 2};
  s.fed_text = {"a", "b"};
  s.position = 10;
  s.needle_begin = 10;
  s.needle_end = 12;
  r.sessions.push_back(s);
  r.needle = NeedlePlant{"The word is x.", "What is the word? The word is", "x", {5, 6}, {7}};
  r.asked = {AskAnswer{3.25, 1, true, 0.5, " x and"}};
  std::string line = recording_step_line(r);
  const StepRecord back = parse_step_line(line, kRecordingVersion);
  EXPECT_EQ(back.sessions[0].needle_begin, 10);
  EXPECT_EQ(back.sessions[0].needle_end, 12);
  ASSERT_TRUE(back.needle);
  EXPECT_EQ(back.needle->question, "What is the word? The word is");
  EXPECT_EQ(back.needle->answer_ids, std::vector<int>{7});
  ASSERT_EQ(back.asked.size(), 1u);
  EXPECT_EQ(back.asked[0].answer_nll, 3.25);
  EXPECT_TRUE(back.asked[0].exact);
  EXPECT_EQ(back.asked[0].said, " x and");
}
