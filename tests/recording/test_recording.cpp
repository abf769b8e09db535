// The recording format (core/recording): a step round-trips exactly, and a header, a step, a file or a
// stream of another kind that does not fit is one error naming the file and its line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/base/text_file.h"
#include "core/recording/capture_schedule.h"
#include "core/recording/checkpoint_stream.h"
#include "core/recording/recording.h"
#include "core/recording/step_line.h"
#include "core/recording/step_payload.h"
#include "core/studio/studio_run.h"
#include "tests/analysis/two_head_capture.h"
#include "tests/assets.h"

using namespace h2o;
using h2o::test::two_head_capture;

TEST(Recording, StepRoundTripsExactlyIncludingPartialUtf8) {
  StepRecord r;
  r.step = 7;
  r.phase = Phase::Decode;
  r.prompt_index = 2;
  r.turn_end = true;
  r.engine_seconds = 0.1 + 0.2;
  SessionRecord s;
  s.session = 1;
  s.fed = {5, 6};
  s.fed_text = {"a\n", std::string("\xe2\x82", 2)};  // half a euro sign
  s.token = 9;
  s.text = "\xff";
  s.cached_tokens = 3;
  s.quantized_tokens = 2;
  s.live_bytes = 1 << 20;
  s.step_ms = 1.0 / 3;
  s.decode_tokens_per_s = 123.456789;
  s.position = 40;
  s.evictions.everywhere = {2};
  s.evictions.by_head = {{1, 0, 4}};
  s.nll = {0.7};
  s.kl = {0.01};
  s.agree = {1};
  s.attention = {two_head_capture()};
  s.attention[0].top_share = {0.5f, 0.6f};
  s.layer_states = {LayerState{1, {{0, 3}}, {{1.5f, 0.1f}}}};
  r.sessions.push_back(s);
  SessionRecord stopped;
  stopped.session = 0;
  stopped.stopped = "out of KV memory: 1.0 MiB held, 0.5 MiB more needed, limit 1.0 MiB";
  r.sessions.push_back(stopped);
  const std::string line = recording_step_line(r);
  std::string text = line;
  const StepRecord back = parse_step_line(text);
  std::string cut = line.substr(0, line.size() / 2);
  EXPECT_THROW(parse_step_line(cut), Error);
  std::string two = line + " " + line, blanks = line + "  \t";  // a second object is not this line's
  EXPECT_THROW(parse_step_line(two), Error);
  EXPECT_NO_THROW(parse_step_line(blanks));
  EXPECT_EQ(recording_step_line(back), line);
  EXPECT_EQ(back.sessions[0].fed_text[1], s.fed_text[1]);
  EXPECT_EQ(back.sessions[0].text, "\xff");
  EXPECT_EQ(back.engine_seconds, r.engine_seconds);
  EXPECT_EQ(back.sessions[0].step_ms, s.step_ms);
  EXPECT_EQ(back.sessions[0].quantized_tokens, 2);
  EXPECT_EQ(back.sessions[1].quantized_tokens, 0);  // not written where there are none
  EXPECT_EQ(line.find("quantized_tokens", line.find("out of KV memory")), std::string::npos);
  // Probabilities come back as the recording keeps them (8-bit codes), the rest exactly.
  StepRecord rounded = r;
  round_to_recorded(rounded);
  EXPECT_EQ(back.sessions[0].attention[0].probs, rounded.sessions[0].attention[0].probs);
  EXPECT_NE(back.sessions[0].attention[0].probs, s.attention[0].probs);  // the capture has values between codes
  EXPECT_EQ(back.sessions[0].attention[0].key_positions, s.attention[0].key_positions);
  EXPECT_EQ(back.sessions[0].attention[0].query_positions, s.attention[0].query_positions);
  EXPECT_EQ(back.sessions[0].evictions, s.evictions);
  EXPECT_EQ(back.sessions[0].layer_states[0].positions, s.layer_states[0].positions);
  EXPECT_EQ(back.sessions[0].layer_states[0].scores, s.layer_states[0].scores);
  EXPECT_EQ(back.sessions[0].attention[0].top_share, s.attention[0].top_share);
  EXPECT_EQ(back.sessions[0].layer_states[0].scores, s.layer_states[0].scores);
  EXPECT_EQ(back.sessions[0].evictions, s.evictions);
  EXPECT_EQ(back.sessions[0].position, 40);
  EXPECT_TRUE(back.sessions[0].stopped.empty());
  EXPECT_EQ(back.sessions[1].stopped, stopped.stopped);
}

TEST(Recording, AHeaderOfImpossibleNumbersIsOneError) {
  const auto dir = test::temp_dir("recording-header");
  const std::string path = (dir / "bad.jsonl").string();
  const auto header_with = [&](const std::string& layers, const std::string& policy_extra) {
    write_file_atomic(path, R"({"format":"h2o-studio-recording","version":2,"header":{"mode":"stream","layers":)" + layers +
                                R"(,"heads":2,"kv_heads":1,"policies":[{"policy":"h2o")" + policy_extra + "}]}}\n");
  };
  const auto error_of = [&] {
    try {
      RecordingReader reader(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  header_with("1e110", "");
  EXPECT_NE(error_of().find("\"layers\": expected a whole number"), std::string::npos) << error_of();
  header_with("2", R"(,"heavy":3.5e300)");
  EXPECT_NE(error_of().find("\"heavy\": expected a whole number"), std::string::npos) << error_of();
  header_with("100000", "");
  EXPECT_NE(error_of().find("no model has 100000 layers"), std::string::npos) << error_of();
  header_with("2", "");
  EXPECT_EQ(error_of(), "no error");
  // Settings of the wrong size keep their defaults.
  const StudioConfig c = studio_config_from_json(nlohmann::json::parse(R"({"budget": 1e110, "temperature": 1e300, "seed": -1})"));
  EXPECT_EQ(c.budget, StudioConfig{}.budget);
  EXPECT_EQ(c.temperature, StudioConfig{}.temperature);
  EXPECT_EQ(c.seed, StudioConfig{}.seed);
}

// A step's payload is read against its header's shape and its session's
// policy: a head of an H2O session at budget 64 (slack 0) that fed 2 tokens
// can lose at most 66 tokens a step, a full cache's at most what the stream
// has seen, and a session the header does not name is refused before its
// payload is read.
TEST(Recording, APayloadIsBoundedByItsSessionsPolicyAndTheModelsShape) {
  StepRecord r;
  r.step = 3;
  SessionRecord s;
  s.session = 0;
  s.fed = {5, 6};
  s.position = 1000;
  for (int32_t p = 0; p < 300; ++p) s.evictions.by_head.push_back({0, 1, p});
  r.sessions.push_back(s);
  const std::string line = recording_step_line(r);
  PolicyConfig h2o = PolicyConfig::named("h2o");
  h2o.set("sinks", 4).set("heavy", 28).set("recent", 32);
  LineShape shape{2, 4, 2, {h2o.rule(), PolicyConfig().rule()}};
  const auto error_of = [&](const LineShape& with) {
    std::string text = line;
    try {
      parse_step_line(text, kRecordingVersion, &with);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(shape).find("session 0: payload: a count of 300 where at most 66 fit"), std::string::npos)
      << error_of(shape);
  std::swap(shape.rules[0], shape.rules[1]);  // session 0 the full cache: 1002 tokens seen
  EXPECT_EQ(error_of(shape), "");
  LineShape one_kv_head = shape;
  one_kv_head.kv_heads = 1;
  EXPECT_NE(error_of(one_kv_head).find("session 0: payload: an eviction outside the model"), std::string::npos)
      << error_of(one_kv_head);
  LineShape no_session = shape;
  no_session.rules.clear();
  EXPECT_NE(error_of(no_session).find("session 0: no such policy in the header"), std::string::npos);
}

TEST(Recording, AStepThatDoesNotFitItsHeaderIsOneErrorNamingItsLine) {
  const auto dir = test::temp_dir("recording-fit");
  const std::string path = (dir / "unfit.jsonl").string();
  RecordingHeader h;
  h.layers = 2;
  h.heads = 2;
  h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  const auto first_error = [&](const std::function<void(SessionRecord&)>& spoil) {
    {
      RecordingWriter writer(path, h);
      StepRecord r;
      r.sessions.resize(1);
      r.sessions[0].fed = {1};  // one token, at stream position 10
      r.sessions[0].position = 10;
      AttentionCapture a;
      a.layer = 1;
      a.rows = 1;
      a.query_positions = {0};
      a.key_positions = {{0}};
      a.probs = {{1.0f}, {1.0f}};
      r.sessions[0].attention = {a};
      r.sessions[0].layer_states = {LayerState{0, {{0}}, {{0.5f}}}};
      writer.write(r);  // a good step first
      r.step = 1;
      spoil(r.sessions[0]);
      writer.write(r);
    }
    RecordingReader reader(path);
    try {
      while (reader.next()) {
      }
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto says = [](const std::string& error, const std::string& what) {
    return error.find("unfit.jsonl:3: session 0: ") != std::string::npos && error.find(what) != std::string::npos;
  };
  std::string e = first_error([](SessionRecord& s) { s.attention[0].key_positions = {{0}, {1}}; });
  EXPECT_TRUE(says(e, "key positions do not list every KV head")) << e;
  e = first_error([](SessionRecord& s) { s.attention[0].probs[1] = {0.5f, 0.5f}; });
  EXPECT_TRUE(says(e, "probabilities are not rows x keys")) << e;
  e = first_error([](SessionRecord& s) { s.attention[0].key_positions = {{-100}}; });
  EXPECT_TRUE(says(e, "a negative key position")) << e;
  e = first_error([](SessionRecord& s) { s.attention[0].layer = 7; });
  EXPECT_TRUE(says(e, "no such layer")) << e;
  e = first_error([](SessionRecord& s) { s.layer_states[0].scores = {}; });
  EXPECT_TRUE(says(e, "positions and scores do not list every KV head")) << e;
  e = first_error([](SessionRecord& s) { s.session = 3; });
  EXPECT_NE(e.find("session 3: no such policy in the header"), std::string::npos) << e;
  e = first_error([](SessionRecord& s) { s.evictions.by_head = {{0, 5, 2}}; });
  EXPECT_TRUE(says(e, "an eviction outside the model")) << e;
  // Reliability round 4: these replayed with exit 0.
  e = first_error([](SessionRecord& s) { s.position = -100; });
  EXPECT_TRUE(says(e, "position -100 out of range")) << e;
  e = first_error([](SessionRecord& s) { s.decode_tokens_per_s = -5; });
  EXPECT_TRUE(says(e, "a negative time or rate")) << e;
  e = first_error([](SessionRecord& s) { s.step_ms = -1; });
  EXPECT_TRUE(says(e, "a negative time or rate")) << e;
  e = first_error([](SessionRecord& s) { s.quantized_tokens = s.cached_tokens + 1; });
  EXPECT_TRUE(says(e, "outside 0 to cached_tokens")) << e;
  // Read whole, a capture's arrays may not be missing.
  e = first_error([](SessionRecord& s) {
    s.attention[0].rows = 1000;
    s.attention[0].query_positions.clear();
    s.attention[0].key_positions.clear();
    s.attention[0].probs.clear();
  });
  EXPECT_TRUE(says(e, "query positions do not match its rows")) << e;
  EXPECT_EQ(first_error([](SessionRecord&) {}), "no error");
  // Steps the analyzer cannot number.
  {
    RecordingWriter writer(path, h);
    StepRecord r;
    r.step = -5;
    writer.write(r);
  }
  try {
    RecordingReader reader(path);
    reader.next();
    FAIL() << "a negative step was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unfit.jsonl:2: step -5 out of range"), std::string::npos) << e.what();
  }
}

// Reliability round 4: `--replay` of a FIFO blocked for good (opening it waited
// for a writer); a folder said "empty file". Both are one line naming the path.
TEST(Recording, APipeOrAFolderIsRefusedBeforeItIsOpened) {
  const auto dir = test::temp_dir("recording-pipe");
  const std::string fifo = (dir / "f.jsonl").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    RecordingReader reader(fifo);
    ADD_FAILURE() << "a pipe was opened as a recording";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fifo + ": not a regular file (a pipe"), std::string::npos) << e.what();
  }
  try {
    StudioRun::replay(dir.string());
    ADD_FAILURE() << "a folder was opened as a recording";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.string() + ": a folder, not a recording"), std::string::npos) << e.what();
  }
}

// A text file, a JSON file of another kind, or a JSON array as a recording: one line naming the file
// and what it is not, never the parser's "[json.exception.parse_error.101] … last read: '1 P'".
TEST(Recording, AFileOfAnotherKindIsNamedNotAParsersMessage) {
  const auto dir = test::temp_dir("recording-other-kind");
  for (const char* content : {"1 Peter 1:1 Paul, an apostle\n", "{\"model\": \"x\"}\n", "[1, 2]\n"}) {
    const std::string path = (dir / "other.h2orec.jsonl").string();
    std::ofstream(path) << content;
    try {
      RecordingReader reader(path);
      ADD_FAILURE() << "read as a recording: " << content;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), path + ": not an H2O Studio recording (its first line is not a recording's header)");
    }
  }
}

// Version 4: a step's payloads follow its line as bytes. A file cut inside
// them, or a line whose "tail" is not a byte count, is one error naming its
// line after every step before it; the steps before still count and read.
TEST(Recording, AStepsPayloadsCutShortAreNamedWithTheirLine) {
  const auto dir = test::temp_dir("recording-tail");
  const std::string path = (dir / "tail.jsonl").string();
  RecordingHeader h;
  h.layers = h.heads = h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  {
    RecordingWriter writer(path, h);
    for (int64_t step = 0; step < 4; ++step) {
      StepRecord r;
      r.step = step;
      r.sessions.resize(1);
      r.sessions[0].fed = {1};
      r.sessions[0].position = 20 + step;
      r.sessions[0].evictions.by_head = {{0, 0, int32_t(step)}, {0, 0, int32_t(step + 10)}};
      writer.write(r);
    }
  }
  const std::string whole = read_text_file(path);
  ASSERT_EQ(whole.rfind(std::string(kTailField), whole.find('\n') + 1), whole.find('\n') + 1);  // step 0 has a tail
  EXPECT_EQ(count_recorded_steps(path), 4);
  const auto error_reading = [&](const std::string& text, int steps_before) {
    write_file_atomic(path, text);
    RecordingReader reader(path);
    for (int i = 0; i < steps_before; ++i) {
      auto r = reader.next();
      if (!r) return std::string("ended early");
      if (r->sessions[0].evictions.by_head.size() != 2) return std::string("a payload lost");
    }
    try {
      reader.next();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Cut inside step 2's payloads (line 4): steps 0 and 1 read, then one error.
  const size_t step2 = whole.find("{\"tail\"", whole.find("\"step\":1"));
  std::string e = error_reading(whole.substr(0, whole.find('\n', step2) + 3), 2);
  EXPECT_NE(e.find("tail.jsonl:4: the file ends inside a step's payloads"), std::string::npos) << e;
  EXPECT_EQ(count_recorded_steps(path), 2);
  // A count that is no count, or claims a gigabyte the file has not got.
  for (const char* count : {"x", "0", "-4", "99999999999"}) {
    std::string bad = whole;
    const size_t at = step2 + kTailField.size();
    bad.replace(at, bad.find(',', at) - at, count);
    e = error_reading(bad, 2);
    EXPECT_TRUE(e.find("tail.jsonl:4: the step's \"tail\" is not a byte count") != std::string::npos ||
                e.find("tail.jsonl:4: the file ends inside") != std::string::npos)
        << count << ": " << e;
  }
  // Read back at random through the index, the steps are whole.
  write_file_atomic(path, whole);
  RecordingReader reader(path);
  while (reader.next()) {
  }
  RecordingLines lines(path, reader.header(), reader.version());
  EXPECT_EQ(lines.read(reader.index(), 2).sessions[0].evictions.by_head[1].position, 12);
}

TEST(Recording, AStepOutOfOrderIsNamedWithItsFileAndLine) {
  const auto dir = test::temp_dir("recording-order");
  RecordingHeader h;
  h.layers = h.heads = h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  // Swapped, repeated, missing: each stops the reading at its line, after the steps before it.
  for (const std::vector<int64_t>& steps : {std::vector<int64_t>{0, 1, 3, 2}, {0, 1, 1, 2}, {0, 1, 3}}) {
    const std::string path = (dir / "steps.jsonl").string();
    {
      RecordingWriter writer(path, h);
      for (int64_t step : steps) {
        StepRecord r;
        r.step = step;
        r.sessions.resize(1);
        writer.write(r);
      }
    }
    RecordingReader reader(path);
    ASSERT_TRUE(reader.next());
    ASSERT_TRUE(reader.next());
    try {
      reader.next();
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ":4: step " + std::to_string(steps[2]) + " does not follow step 1", 0), 0u)
          << e.what();
    }
  }
}

TEST(Recording, ReaderNamesTheBadLine) {
  const auto dir = test::temp_dir("recording");
  const std::string path = (dir / "bad.jsonl").string();
  RecordingHeader h;
  h.layers = h.heads = h.kv_heads = 1;
  h.policies = {PolicyConfig{}};
  write_file_atomic(path, recording_first_line(h) + "\n{\"step\": 1}\n");
  RecordingReader reader(path);
  EXPECT_EQ(reader.header().layers, 1);
  try {
    reader.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
  write_file_atomic(path, "{\"format\":\"something else\"}\n");
  EXPECT_THROW(RecordingReader{path}, Error);
  // Lines are parsed a batch ahead, on every core: still every good step first, in order, then the
  // bad line by its number.
  const std::string many = (dir / "many.jsonl").string();
  {
    RecordingWriter writer(many, h);
    for (int64_t step = 0; step < 40; ++step) {
      StepRecord r;
      r.step = step;
      r.sessions.resize(1);
      writer.write(r);
    }
  }
  {
    std::ofstream append(many, std::ios::app);
    append << "{\"step\": 40}\n";
  }
  RecordingReader batched(many);
  for (int64_t step = 0; step < 40; ++step) {
    const auto r = batched.next();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->step, step);
  }
  EXPECT_EQ(batched.index().offsets.size(), 40u);
  try {
    batched.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("many.jsonl:42"), std::string::npos) << e.what();
  }
}

// The format bounds its sessions by what a reader may allocate, not by the
// app's panes: a file of five sessions reads, and the app says why it does not
// show it; one past the format's own bound is refused by the reader.
TEST(Recording, ItsBoundOnSessionsIsItsOwnAndTheAppSaysWhatItShows) {
  const auto dir = test::temp_dir("recording-sessions");
  const auto write = [&](int sessions) {
    RecordingHeader h;
    h.layers = h.heads = h.kv_heads = 1;
    h.policies.assign(size_t(sessions), PolicyConfig{});
    const std::string path = (dir / ("s" + std::to_string(sessions) + ".h2orec.jsonl")).string();
    RecordingWriter writer(path, h);
    return path;
  };
  const std::string five = write(5);
  EXPECT_EQ(RecordingReader(five).header().policies.size(), 5u);
  try {
    StudioRun::replay(five);
    ADD_FAILURE() << "the app replayed five sessions in four panes";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), five + ": it records 5 sessions; the app shows at most 4 panes");
  }
  const std::string too_many = write(kMaxRecordedSessions + 1);
  try {
    RecordingReader reader(too_many);
    ADD_FAILURE() << "read a header of " << kMaxRecordedSessions + 1 << " sessions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("17 policies (1 to 16)"), std::string::npos) << e.what();
  }
}
