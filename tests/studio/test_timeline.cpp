// The timeline's promise, Qt-free: the snapshot of an earlier step, built
// from the analyzer's whole history and the captures read back from the
// recording, is the snapshot the run showed at that step. Also the pieces it
// rests on: the recording index, whole-stream survival rasters, characters
// made of byte tokens, the budget split, the teaching views; and the app's
// controller without Qt: the timeline's cursor, the replay pace, the exports.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/analysis/analyzer.h"
#include "core/analysis/survival.h"
#include "core/analysis/text_cells.h"
#include "core/base/json_text.h"
#include "core/cpu/cpu_backend.h"
#include "core/recording/capture_schedule.h"
#include "core/recording/recording.h"
#include "core/recording/step_payload.h"
#include "core/studio/run_export.h"
#include "core/studio/studio_params.h"
#include "core/studio/studio_setup.h"
#include "core/studio/timeline.h"
#include "tests/assets.h"
#include "tests/studio/small_studio_config.h"

using namespace h2o;

namespace {

const StudioCaptureSchedule kWatch(1);

std::unique_ptr<Engine> engine_for(const StudioConfig& c) {
  const StudioInputs in = load_studio_inputs(c);
  return make_studio_engine(c, in, make_cpu_backend(in.model, 1));
}

StudioConfig small_config() { return test::small_studio_config(); }

std::string fingerprint(const StudioSnapshot& s) {
  std::ostringstream o;
  o.precision(17);
  o << s.step << ' ' << s.engine_seconds << ' ' << s.capture_layer << ' ' << s.phase << ' ' << s.prompt_index << '\n';
  for (const auto& p : s.panes) {
    o << p.policy << ' ' << p.cached_tokens << ' ' << p.live_bytes << ' ' << p.tokens_per_s << ' ' << p.stream_length
      << ' ' << p.generated << ' ' << p.sparsity << ' ' << p.score_rank.fit.slope << ' ' << p.stopped << '\n';
    for (const auto& t : p.tokens) o << int(t.fate) << t.position << t.text;
    o << '|';
    for (double v : p.heatmap.values) o << v << ',';
    for (double v : p.heatmap.column_scores) o << v << ',';
    for (int32_t q : p.heatmap.query_positions) o << q << ',';
    for (uint8_t c : p.overview.cells) o << int(c);
    for (uint8_t c : p.detail.cells) o << int(c);
    for (double y : p.sparsity_history.y) o << y << ',';
    o << '\n';
  }
  for (const auto* all : {&s.kv_bytes, &s.throughput, &s.perplexity, &s.agreement})
    for (const auto& series : *all)
      for (double y : series.y) o << y << ',';
  o << s.inspection.position << '\n';
  for (const auto& pp : s.inspection.policies) {
    o << int(pp.fate_now);
    for (const auto& e : pp.evictions) o << e.layer << e.kv_head << e.step;
    // Score histories are thinned as they grow (64 samples a line): an old step shows them coarser.
    for (const auto& line : pp.score_lines) o << line.series.x.empty();
  }
  for (const auto& pane : s.head_view.panes) {
    o << pane.query_position << pane.query_text;
    for (const auto& k : pane.keys) o << k.position << k.weight << int(k.fate);
  }
  for (const auto& cell : s.model_view.cells)
    for (float v : cell.values) o << v << ',';
  return o.str();
}

}  // namespace

TEST(Timeline, AnEarlierStepLooksAsItDidWhenItWasTheNewest) {
  const auto dir = test::temp_dir("timeline");
  const std::string path = (dir / "spool.jsonl").string();
  auto engine = engine_for(small_config());
  RecordingHeader header = make_header(*engine, nlohmann::json::object(), "stream");
  Analyzer all(header);
  Analyzer until(header);
  RecordingWriter spool(path, header);
  std::vector<int64_t> checked = {3, 41, 69, 100};
  std::map<int64_t, std::map<std::string, std::string>> then;  // step -> view -> fingerprint
  const auto views = [] {
    std::vector<std::pair<std::string, ViewSelection>> out;
    for (int layer : {1, 0, 4})
      for (int head : {-1, 0, 5}) {
        ViewSelection v;
        v.layer = layer;
        v.head = head;
        v.inspect_position = 2;
        out.push_back({std::to_string(layer) + "/" + std::to_string(head), v});
      }
    ViewSelection scrolled;
    scrolled.layer = 1;
    scrolled.text_first = 5;
    scrolled.max_tokens = 40;
    scrolled.detail_first = 10;
    scrolled.detail_positions = 50;
    out.push_back({"scrolled", scrolled});
    return out;
  }();
  for (int i = 0; i < 140; ++i) {
    StepRecord r = engine->step(&kWatch);
    round_to_recorded(r);  // as StudioRun's loop does
    spool.write(r);
    all.ingest(r);
    if (std::find(checked.begin(), checked.end(), r.step) != checked.end())
      for (const auto& [name, v] : views) then[r.step][name] = fingerprint(all.snapshot(v));
  }
  spool.flush();
  for (int64_t step : checked) {
    const CaptureWindow window = load_capture_window(path, spool.index(), 2, header, step);
    ASSERT_EQ(window.last_step(), step);
    for (auto [name, v] : views) {
      v.step = step;
      const StudioSnapshot s = all.snapshot(v, &window);
      EXPECT_EQ(s.step, step);
      EXPECT_FALSE(s.following);
      EXPECT_TRUE(s.captures_recorded);
      EXPECT_EQ(fingerprint(s), then[step][name]) << "step " << step << ", view " << name;
    }
    // Without the captures, the numbers and rasters are still there; the heatmap says why it is empty.
    ViewSelection v;
    v.step = step;
    const StudioSnapshot bare = all.snapshot(v);
    EXPECT_FALSE(bare.captures_recorded);
    EXPECT_EQ(bare.panes[2].cached_tokens, all.snapshot(v, &window).panes[2].cached_tokens);
    EXPECT_FALSE(bare.panes[2].heatmap.note.empty());
  }
  EXPECT_GT(all.history_bytes(), 0);
}

TEST(Timeline, RecordingIndexReadsAnyStepAsTheReaderDid) {
  const auto dir = test::temp_dir("index");
  const std::string path = (dir / "run.jsonl").string();
  auto engine = engine_for(small_config());
  RecordingHeader header = make_header(*engine, nlohmann::json::object(), "stream");
  header.view_layer = 1;
  header.view_head = 3;
  StudioConfig c = small_config();
  c.budget = 32;
  c.params["sinks"] = 2;
  header.settings = studio_config_json(c);
  {
    RecordingWriter w(path, header);
    for (int i = 0; i < 30; ++i) w.write(engine->step(&kWatch));
  }
  EXPECT_EQ(count_recorded_steps(path), 30);
  RecordingReader reader(path);
  EXPECT_EQ(reader.header().view_layer, 1);
  EXPECT_EQ(reader.header().view_head, 3);
  EXPECT_EQ(reader.header().context, 512);
  const StudioConfig back = studio_config_from_json(reader.header().settings);
  EXPECT_EQ(back.budget, 32);
  EXPECT_EQ(back.params.at("sinks"), 2);
  EXPECT_EQ(back.model, "synthetic:stories260K");
  std::vector<std::string> lines;
  while (auto r = reader.next()) lines.push_back(recording_step_line(*r));
  ASSERT_EQ(lines.size(), 30u);
  RecordingLines random(path, reader.header());
  for (int64_t step : {29, 0, 17, 8}) EXPECT_EQ(recording_step_line(random.read(reader.index(), step)), lines[size_t(step)]);
  EXPECT_THROW(random.read(reader.index(), 30), Error);
  // Sessions whose states were read: the bounded ones every step.
  EXPECT_EQ(reader.index().last_state_at(2, 29), 29);
}

TEST(Timeline, ASeekSkimsTheStepsItPassesAndShowsWhatAWholeReadShows) {
  const auto dir = test::temp_dir("skim");
  const std::string path = (dir / "run.jsonl").string();
  auto engine = engine_for(small_config());
  const RecordingHeader header = make_header(*engine, nlohmann::json::object(), "stream");
  {
    RecordingWriter w(path, header);
    for (int i = 0; i < 120; ++i) w.write(engine->step(&kWatch));
  }
  const int64_t target = 100;
  const auto read_to = [&](RecordingReader& reader, Analyzer& analyzer) {
    while (analyzer.steps_ingested() == 0 || analyzer.latest_step() < target) analyzer.ingest(*reader.next());
  };
  RecordingReader whole(path);
  Analyzer read_whole(whole.header());
  read_to(whole, read_whole);
  RecordingReader skimmed(path);
  Analyzer read_skimmed(skimmed.header());
  read_replay_to(skimmed, read_skimmed, target, [&] {
    const auto r = skimmed.next();
    if (r) read_skimmed.ingest(*r);
    return r.has_value();
  });
  EXPECT_EQ(read_skimmed.latest_step(), target);
  for (int layer : {1, 0, 4})
    for (int head : {-1, 5}) {
      ViewSelection v;
      v.layer = layer;
      v.head = head;
      EXPECT_EQ(fingerprint(read_skimmed.snapshot(v)), fingerprint(read_whole.snapshot(v)))
          << "layer " << layer << ", head " << head;
    }
  // Lines past the step are read whole.
  const auto next = skimmed.next();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->step, target + 1);
  EXPECT_FALSE(next->sessions[2].attention.at(0).probs.empty());
  RecordingReader again(path);
  again.skim_below(5);
  const auto first = again.next();
  EXPECT_TRUE(first->sessions[2].attention.at(0).probs.empty());
  EXPECT_TRUE(first->sessions[2].attention.at(0).key_positions.empty());
  EXPECT_FALSE(first->sessions[2].attention.at(0).top_share.empty());
  EXPECT_LE(first->sessions[2].layer_states.size(), 1u);
  // Lines read ahead skimmed are read again, whole, once the bound no longer skims them.
  again.skim_below(-1);
  const auto second = again.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->step, 1);
  EXPECT_FALSE(second->sessions[2].attention.at(0).probs.empty());
  // Past the recording's end: its last step, shown as a whole read shows it.
  RecordingReader to_end(path);
  Analyzer read_to_end(to_end.header());
  read_replay_to(to_end, read_to_end, 5000, [&] {
    const auto r = to_end.next();
    if (r) read_to_end.ingest(*r);
    return r.has_value();
  });
  EXPECT_EQ(read_to_end.latest_step(), 119);
  EXPECT_FALSE(read_to_end.live_window().captures(2, 1)->back().capture.probs.empty());
}

TEST(Survival, SinksAndHeavyHittersSurviveBinningOfAWholeLongStream) {
  // 5000 steps, one position each after a prefill of 64: H2O(4, 8, 16), one
  // heavy hitters (positions 5 and 100) never evicted, everything else leaves as soon
  // as it is out of the recent window.
  const PolicyConfig h = PolicyConfig::named("h2o").set("sinks", 4).set("heavy", 8).set("recent", 16);
  std::vector<int32_t> birth, evict;
  for (int p = 0; p < 64; ++p) birth.push_back(0);
  for (int s = 1; s < 5000; ++s) birth.push_back(s);
  for (size_t p = 0; p < birth.size(); ++p) {
    const size_t gone_when = p + 16 + 1;  // the cut after the 17th later token
    evict.push_back(p < 4 || p == 5 || p == 100 || gone_when >= birth.size() ? -1 : birth[gone_when]);
  }
  const SurvivalRaster r = survival_raster(h.rule(), birth, evict, 0, int64_t(birth.size()), 0, 4999, 300, 60);
  ASSERT_TRUE(r.binned());
  ASSERT_EQ(r.cols, 300);
  // Column 0 holds the sinks alone: sink colour in every row.
  EXPECT_EQ(r.column_first(1), 4);
  for (int row = 0; row < r.rows; ++row) EXPECT_EQ(r.at(row, 0), Fate::Sink) << row;
  // The heavy hitters' columns show them in the last row, long after they were recent,
  // the one right after the sinks too.
  EXPECT_EQ(r.column_of(5), 1);
  EXPECT_EQ(r.at(r.rows - 1, 1), Fate::Heavy);
  EXPECT_EQ(r.at(r.rows - 1, r.column_of(100)), Fate::Heavy);
  for (int c = 0; c < r.cols; ++c) EXPECT_EQ(r.column_of(r.column_first(c)), c) << c;
  // Elsewhere, old columns are evicted by the end.
  EXPECT_EQ(r.at(r.rows - 1, r.cols / 2), Fate::Evicted);
  // The newest column: recent (and the token just past the window, held a step longer for its score).
  EXPECT_TRUE(r.at(r.rows - 1, r.cols - 1) == Fate::Recent || r.at(r.rows - 1, r.cols - 1) == Fate::Heavy);
  // The exact raster agrees with fate_of cell by cell (no binning).
  const SurvivalRaster exact = survival_raster(h.rule(), birth, evict, 60, 140, 40, 160, 1000, 1000);
  ASSERT_FALSE(exact.binned());
  for (int row = 0; row < exact.rows; ++row)
    for (int c = 0; c < exact.cols; ++c) {
      const int64_t t = exact.first_step + row, p = exact.first_position + c;
      const int64_t length = std::upper_bound(birth.begin(), birth.end(), int32_t(t)) - birth.begin();
      const bool held = evict[size_t(p)] < 0 || evict[size_t(p)] > t;
      EXPECT_EQ(exact.at(row, c), fate_of(h.rule(), p, held, length)) << "step " << t << " position " << p;
    }
}

TEST(TextCells, ByteTokensOfOneCharacterAreDrawnOnce) {
  // 中 = e4 b8 ad, spelled as three byte tokens between two words; 😀 = f0 9f 98 80 as two pieces.
  const std::vector<std::string> pieces = {"a", "\xe4", "\xb8", "\xad", " b", "\xf0\x9f", "\x98\x80", "c\xe4"};
  const auto piece = [&](int64_t p) { return std::string_view(pieces[size_t(p)]); };
  const auto groups = group_characters(piece, 0, int64_t(pieces.size()));
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_EQ(groups[1].text, "\xe4\xb8\xad");
  EXPECT_EQ(groups[1].first, 1);
  EXPECT_EQ(groups[1].last, 3);
  EXPECT_EQ(groups[2].text, " b");
  EXPECT_EQ(groups[3].text, "\xf0\x9f\x98\x80");
  // An unfinished character at the end is shown as one replacement mark, not dropped.
  EXPECT_EQ(groups[4].text, "c\xef\xbf\xbd");
  // A heatmap column of any of the three bytes is labelled with the character.
  for (int64_t p : {1, 2, 3}) EXPECT_EQ(character_at(piece, p, int64_t(pieces.size())), "\xe4\xb8\xad") << p;
  EXPECT_EQ(character_at(piece, 6, int64_t(pieces.size())), "\xf0\x9f\x98\x80");
  EXPECT_EQ(character_at(piece, 4, int64_t(pieces.size())), " b");
  // A window that starts inside a character does not invent a character.
  const auto tail = group_characters(piece, 2, 4);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0].text, "\xef\xbf\xbd");
  EXPECT_EQ(utf8_unfinished_tail("\xe4\xb8"), 2u);
  EXPECT_EQ(utf8_unfinished_tail("ab"), 0u);
  EXPECT_EQ(utf8_continuation_head("\xb8\xad!"), 2u);
}

TEST(TextCells, AHeatmapColumnIsNamedByTheWordItsPieceIsPartOf) {
  // SentencePiece-like pieces: a word begins with a space; "possible" is cut in two.
  const std::vector<std::string> pieces = {" the", " possi", "ble", " LORD", ",", " go", "ing", "\n", "ab",
                                           "cd", "ef", "gh", "ij"};
  const auto piece = [&](int64_t p) { return std::string_view(pieces[size_t(p)]); };
  const int64_t end = int64_t(pieces.size());
  EXPECT_EQ(word_at(piece, 1, end), " possible");
  EXPECT_EQ(word_at(piece, 2, end), " possible");  // not "ble"
  EXPECT_EQ(word_at(piece, 0, end), " the");       // a whole word is itself
  EXPECT_EQ(word_at(piece, 3, end), " LORD");      // punctuation is not part of the word
  EXPECT_EQ(word_at(piece, 4, end), ",");
  EXPECT_EQ(word_at(piece, 6, end), " going");
  EXPECT_EQ(word_at(piece, 7, end), "\n");
  // At most kWordReach pieces either side: a run of letters with no space does not swallow the text.
  EXPECT_EQ(word_at(piece, 8, end), "abcdefgh");
  EXPECT_EQ(word_at(piece, 12, end), "cdefghij");
  EXPECT_EQ(word_at(piece, 99, end), "");
  // Byte tokens of one character still make that character.
  const std::vector<std::string> bytes = {"a", "\xe4", "\xb8", "\xad", " b"};
  const auto byte_piece = [&](int64_t p) { return std::string_view(bytes[size_t(p)]); };
  EXPECT_EQ(word_at(byte_piece, 2, 5), "\xe4\xb8\xad");
}

TEST(StudioSetup, TheEngineLeavesTheWindowACore) {
  EXPECT_EQ(studio_threads(0, 2), 1);
  EXPECT_EQ(studio_threads(0, 16), 15);
  EXPECT_EQ(studio_threads(0, 1), 1);
  EXPECT_EQ(studio_threads(0, 0), 1);  // hardware_concurrency() may not know
  EXPECT_EQ(studio_threads(2, 2), 2);  // asked for: as asked
  StudioConfig c;
  c.threads = 3;
  EXPECT_EQ(studio_backend_options(c).threads, 3);
}

TEST(StudioSetup, ChangesReadAsTheControlsSayThem) {
  StudioConfig a;
  a.model.clear();
  a.budget = 64;
  a.backend = "cpu";
  a.policies = {"full", "streaming", "h2o"};
  StudioConfig b = a;
  EXPECT_EQ(studio_config_changes(a, b), "");
  b.capture_layer = a.capture_layer + 1;  // the view changes live: no restart
  EXPECT_EQ(studio_config_changes(a, b), "");
  b.backend = "cuda";
  b.model = "kjv-1M.bin";
  b.budget = 32;
  b.params["heavy"] = 12;
  b.rolling = true;
  b.policies = {"full", "h2o"};
  b.kv_limit_mib = 100;
  EXPECT_EQ(studio_config_changes(a, b),
            "device cpu → cuda, budget 64 → 32, heavy auto → 12, KV limit MiB none → 100, model default → kjv-1M.bin, "
            "policies full,streaming,h2o → full,h2o, rolling off → on");
}

namespace {
BudgetSplit fit(int budget, int sinks, int heavy, int recent) {
  return fit_budget_split(budget, {{"sinks", sinks}, {"heavy", heavy}, {"recent", recent}});
}
}  // namespace

TEST(StudioSetup, TheControlsParametersComeFromThePolicyUnits) {
  std::vector<std::string> names;
  for (const StudioParam& p : studio_params()) names.push_back(p.name);
  // The sinks (every kind that evicts), and H2O's two parts; a window is the rest of the budget.
  EXPECT_EQ(names, (std::vector<std::string>{"sinks", "heavy", "recent"}));
  const StudioParam& sinks = studio_params()[0];
  EXPECT_TRUE(sinks.every_kind);
  EXPECT_FALSE(sinks.automatic);
  EXPECT_EQ(sinks.default_value, 4);
  EXPECT_EQ(sinks.kinds, "Streaming, H2O, TOVA");
  const StudioParam& recent = studio_params()[2];
  EXPECT_EQ(recent.kinds, "H2O");
  EXPECT_EQ(recent.kind_names, std::vector<std::string>{"h2o"});
  EXPECT_TRUE(recent.automatic);
  EXPECT_EQ(recent.min_value, 1);
  EXPECT_NE(recent.help.find("auto"), std::string::npos);
  EXPECT_TRUE(is_automatic_param("heavy"));
  EXPECT_FALSE(is_automatic_param("sinks"));
  EXPECT_EQ(StudioConfig().params, (std::map<std::string, int>{{"heavy", 0}, {"recent", 0}, {"sinks", 4}}));
  // Settings keep their keys: "sinks", "heavy", "recent", as before they were fields.
  StudioConfig c;
  c.params["heavy"] = 12;
  const StudioConfig back = studio_config_from_json(studio_config_json(c));
  EXPECT_EQ(back.params.at("heavy"), 12);
  EXPECT_EQ(back.params.at("sinks"), 4);
}

TEST(StudioSetup, ARecordingWithoutSettingsShowsWhatItsPanesSay) {
  PolicySettings settings;
  settings.budget = 40;
  settings.given["sinks"] = 2;
  settings.given["heavy"] = 10;
  settings.slack = 3;
  const std::vector<PolicyConfig> panes = {make_policy(parse_policy_entry("full", "p"), settings),
                                           make_policy(parse_policy_entry("h2o@2bit", "p"), settings),
                                           make_policy(parse_policy_entry("tova", "p"), settings)};
  StudioConfig controls;
  controls.model = "mine.gguf";
  controls.kv_bits = "4";
  const StudioConfig c = studio_config_from_policies(controls, panes, true);
  EXPECT_EQ(c.model, "mine.gguf") << "what the panes do not say stays as it was";
  EXPECT_TRUE(c.forced);
  EXPECT_EQ(c.kv_bits, "") << "each pane names its own precision";
  EXPECT_EQ(c.policies, (std::vector<std::string>{"full", "h2o@2bit", "tova"}));
  EXPECT_EQ(c.budget, 40);
  EXPECT_EQ(c.slack, 3);
  EXPECT_EQ(c.params.at("sinks"), 2);
  EXPECT_EQ(c.params.at("heavy"), 10);
  EXPECT_EQ(c.params.at("recent"), 28);
  // And they make the same panes again.
  const std::vector<PolicyConfig> again = studio_policies(c);
  ASSERT_EQ(again.size(), panes.size());
  for (size_t i = 0; i < panes.size(); ++i) EXPECT_EQ(again[i].describe(), panes[i].describe());
}

TEST(StudioSetup, BudgetSplitIsAlwaysOneEveryPolicyTakes) {
  // The case: budget 32, sinks 2, heavy 50, recent 8.
  const BudgetSplit s = fit(32, 2, 50, 8);
  EXPECT_EQ(s.params.at("sinks") + s.params.at("heavy") + s.params.at("recent"), 32);
  EXPECT_EQ(s.params.at("heavy"), 29);
  EXPECT_EQ(s.params.at("recent"), 1);
  EXPECT_NE(s.adjusted.find("heavy 50 → 29 (room for one recent token)"), std::string::npos) << s.adjusted;
  EXPECT_NE(s.adjusted.find("recent 8 → 1 (sinks + heavy + recent = budget)"), std::string::npos) << s.adjusted;
  StudioConfig c;
  c.budget = s.budget, c.params = s.params;
  c.policies = {"full", "streaming", "h2o", "tova"};
  for (const PolicyConfig& p : studio_policies(c))
    if (p.evicts()) {
      EXPECT_EQ(p.budget(), 32) << p.describe();
    }
  // Valid values pass untouched; sinks leave room for one more token.
  EXPECT_TRUE(fit(64, 4, 10, 50).adjusted.empty());
  EXPECT_TRUE(fit(64, 4, 0, 0).adjusted.empty());
  EXPECT_EQ(fit(8, 12, 0, 0).params.at("sinks"), 7);
  EXPECT_EQ(fit(64, 4, 0, 80).params.at("recent"), 60);
  EXPECT_NE(fit(64, 4, 0, 80).adjusted.find("at most budget − sinks"), std::string::npos);
  for (int budget : {2, 3, 17, 64})
    for (int sinks : {0, 1, 4, 70})
      for (int heavy : {0, 1, 9, 99})
        for (int recent : {0, 1, 7, 99}) {
          const BudgetSplit f = fit(budget, sinks, heavy, recent);
          StudioConfig k;
          k.budget = f.budget, k.params = f.params;
          k.policies = {"streaming", "h2o", "tova"};
          EXPECT_NO_THROW(studio_policies(k)) << budget << ' ' << sinks << ' ' << heavy << ' ' << recent;
        }
}

TEST(Teaching, HeadViewAndModelViewReadTheRecordedAttention) {
  auto engine = engine_for(small_config());
  Analyzer a(make_header(*engine, nlohmann::json::object(), "stream"));
  for (int i = 0; i < 60; ++i) a.ingest(engine->step(&kWatch));
  ViewSelection v;
  v.layer = 1;
  v.head = 3;
  const StudioSnapshot s = a.snapshot(v);
  ASSERT_EQ(s.head_view.panes.size(), 3u);
  EXPECT_EQ(s.head_view.query_step, s.step);
  for (size_t i = 0; i < s.head_view.panes.size(); ++i) {
    const HeadViewPane& p = s.head_view.panes[i];
    ASSERT_FALSE(p.keys.empty()) << p.policy;
    // What the cache held at the query's step, beside what the query saw of it (the head view says both).
    EXPECT_EQ(p.keys_cached, s.panes[i].cached_tokens) << p.policy;
    if (i == 0) EXPECT_LT(p.keys_attended, p.keys_cached);  // the full cache outgrew the capture's first 8 + latest 184
    else EXPECT_GE(p.keys_attended, p.keys_cached) << p.policy;  // a bounded cache's keys and the new token, whole
    EXPECT_GE(p.query_position, 0);
    EXPECT_LE(int(p.keys.size()), v.head_view_keys + p.config.rule().sinks);
    for (size_t k = 1; k < p.keys.size(); ++k) EXPECT_LT(p.keys[k - 1].position, p.keys[k].position);
    double sum = 0;
    for (const auto& k : p.keys) sum += k.weight;
    EXPECT_GT(sum, 0);
    EXPECT_LE(sum, 1.0 + 1e-5);
  }
  // The bounded caches' sinks are always among the keys drawn.
  EXPECT_EQ(s.head_view.panes[2].keys.front().position, 0);
  // The model view: every layer x head of H2O (the first policy that keeps by accumulated score).
  EXPECT_EQ(s.model_view.policy, 2);
  ASSERT_EQ(s.model_view.cells.size(), size_t(5 * 8));
  for (const ModelViewCell& c : s.model_view.cells) {
    EXPECT_GT(c.rows, 0) << "layer " << c.layer << " head " << c.head;
    EXPECT_GT(c.cols, 0);
    EXPECT_EQ(c.values.size(), size_t(c.rows * c.cols));
    EXPECT_GT(c.top, 0);
  }
}

TEST(Curves, RobustRangeIgnoresTheFirstPointsAndMeansThinANoisyCurve) {
  std::vector<double> x, y;
  for (int i = 1; i <= 200; ++i) x.push_back(i), y.push_back(i <= 3 ? 5e12 : 100 + (i % 7));
  const YRange r = robust_y_range({x}, {y}, 0.05, 16);
  EXPECT_LT(r.upper, 120);
  EXPECT_GT(r.lower, 90);
  EXPECT_TRUE(std::isnan(robust_y_range({}, {}, 0.05, 4).upper));
  std::vector<double> bx, by;
  binned_means(x, y, 20, bx, by);
  EXPECT_EQ(bx.size(), 20u);
  EXPECT_DOUBLE_EQ(bx.front(), 5.5);
}

// ---- the app's controller, Qt-free: the timeline's cursor, the replay pace, the exports ----

namespace {

struct SpooledRun {
  std::filesystem::path dir;
  std::string spool_path;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Analyzer> analyzer;
  std::unique_ptr<RecordingWriter> spool;
  TimelineFile file() const { return {&spool->index(), spool_path, 2, spool.get()}; }
};

SpooledRun spooled_run(const std::string& name, int steps) {
  SpooledRun run;
  run.dir = test::temp_dir(name);
  run.spool_path = (run.dir / "spool.jsonl").string();
  run.engine = engine_for(small_config());
  const RecordingHeader header = make_header(*run.engine, nlohmann::json::object(), "stream");
  run.analyzer = std::make_unique<Analyzer>(header);
  run.spool = std::make_unique<RecordingWriter>(run.spool_path, header);
  for (int i = 0; i < steps; ++i) {
    const StepRecord r = run.engine->step(&kWatch);
    run.spool->write(r);
    run.analyzer->ingest(r);
  }
  return run;
}

}  // namespace

TEST(TimelineCursor, SeeksStepsAndFollowsAgainAtTheNewestStep) {
  const SpooledRun run = spooled_run("cursor", 80);
  const Analyzer& a = *run.analyzer;
  ASSERT_EQ(a.latest_step(), 79);
  Timeline t;
  EXPECT_TRUE(t.following());
  EXPECT_EQ(t.window(), nullptr);
  EXPECT_EQ(t.step_before(a), 78);

  EXPECT_EQ(t.seek(a, run.file(), 40), "");
  EXPECT_EQ(t.cursor(), 40);
  ASSERT_NE(t.window(), nullptr);
  EXPECT_EQ(t.window()->last_step(), 40);
  EXPECT_TRUE(t.behind(a));
  // One step on reads one more line: the same window a seek to that step reads.
  EXPECT_EQ(t.advance(a, run.file()), "");
  EXPECT_EQ(t.cursor(), 41);
  ViewSelection v;
  v.step = 41;
  const CaptureWindow fresh = load_capture_window(run.spool_path, run.spool->index(), 2, a.header(), 41);
  EXPECT_EQ(fingerprint(a.snapshot(v, t.window())), fingerprint(a.snapshot(v, &fresh)));

  EXPECT_EQ(t.seek(a, run.file(), -5), "");  // not before the first step
  EXPECT_EQ(t.cursor(), 0);
  EXPECT_EQ(t.step_before(a), 0);
  EXPECT_EQ(t.seek(a, run.file(), 78), "");
  EXPECT_EQ(t.advance(a, run.file()), "");  // onto the newest step: following again
  EXPECT_TRUE(t.following());
  EXPECT_EQ(t.window(), nullptr);
  EXPECT_FALSE(t.behind(a));
  EXPECT_EQ(t.seek(a, run.file(), 500), "");
  EXPECT_TRUE(t.following());

  // No file to read back: the step shows without its captures, quietly.
  EXPECT_EQ(t.seek(a, TimelineFile{}, 30), "");
  EXPECT_EQ(t.cursor(), 30);
  EXPECT_EQ(t.window(), nullptr);
  // A file that cannot be read: one warning naming the step.
  TimelineFile gone = run.file();
  gone.path = (run.dir / "missing.jsonl").string();
  const std::string warning = t.seek(a, gone, 20);
  EXPECT_EQ(warning.rfind("Reading step 20 back failed: ", 0), 0u) << warning;
  EXPECT_EQ(t.window(), nullptr);
  EXPECT_EQ(t.cursor(), 20);
  t.follow();
  EXPECT_TRUE(t.following());
}

TEST(TimelineCursor, ReplayPaceAndTickInterval) {
  ReplayPace pace;
  EXPECT_TRUE(pace.paced());
  EXPECT_EQ(pace.speed(), 1);
  pace.set_speed(2);
  pace.start(10.0, 100.0);
  EXPECT_DOUBLE_EQ(pace.target(100.0), 10.0);
  EXPECT_DOUBLE_EQ(pace.target(101.5), 13.0);  // 1.5 s of wall time at twice the pace
  EXPECT_EQ(tick_interval_ms(true, pace, 4), 15);  // a paced replay ticks often; the speed limit is the live run's
  pace.set_speed(-3);
  EXPECT_FALSE(pace.paced());
  EXPECT_EQ(tick_interval_ms(true, pace, 4), 0);
  EXPECT_EQ(tick_interval_ms(false, pace, 4), 250);  // a live run at 4 steps a second
  EXPECT_EQ(tick_interval_ms(false, pace, 0), 0);
}

TEST(RunExport, RecordingLogsAndReportOfALiveRunAndAReplay) {
  SpooledRun run = spooled_run("export", 30);
  StudioConfig config = small_config();
  const StudioInputs inputs = load_studio_inputs(config);
  const RunInfo info = studio_run_info(config, inputs, false);
  EXPECT_EQ(info.command, "stream");
  EXPECT_EQ(info.command_line, "h2o-studio");
  config.forced = true;
  config.forced_text = "held-out.txt";
  EXPECT_EQ(studio_run_info(config, inputs, false).command, "eval");
  EXPECT_EQ(studio_run_info(config, inputs, false).prompts_path, "held-out.txt");

  const nlohmann::json manifest = describe_run(*run.engine, info);
  RunExport live;
  live.engine = run.engine.get();
  live.spool = run.spool.get();
  live.recording = run.spool_path;
  live.manifest = &manifest;
  live.info = info;
  live.steps = 30;
  live.view_layer = 2;  // the view when saved, not when the run began: its replay opens there
  live.view_head = 1;
  const std::string saved = (run.dir / "saved.jsonl").string();
  live.write_recording(saved);
  RecordingReader back(saved);
  EXPECT_EQ(back.header().view_layer, 2);
  EXPECT_EQ(back.header().view_head, 1);
  int steps = 0;
  while (back.next()) ++steps;
  EXPECT_EQ(steps, 30);
  EXPECT_FALSE(back.totals().is_null());  // a whole recording carries the engine's totals

  live.write_logs((run.dir / "logs").string());
  for (const char* f : {"manifest.json", "steps.csv", "steps.jsonl", "evictions.csv"})
    EXPECT_TRUE(std::filesystem::exists(run.dir / "logs" / f)) << f;

  const auto staging = run.dir / "report.partial";
  std::filesystem::create_directories(staging);
  live.write_report(staging.string(), (run.dir / "report").string(), {}, "2026-11-27T00:00:00Z");
  EXPECT_FALSE(std::filesystem::exists(staging));
  EXPECT_TRUE(std::filesystem::exists(run.dir / "report" / "summary.md"));
  EXPECT_TRUE(std::filesystem::exists(run.dir / "report" / "run.h2orec.jsonl"));
  // A report that cannot take its name leaves nothing behind.
  std::filesystem::create_directories(staging);
  EXPECT_ANY_THROW(live.write_report(staging.string(), (run.dir / "no" / "such" / "report").string(), {}, ""));
  EXPECT_FALSE(std::filesystem::exists(staging));

  // A replay: its recording copied as it is; no logs (the recording holds them).
  RecordingReader replay(saved);
  RunExport replayed;
  replayed.replay = &replay;
  replayed.recording = saved;
  replayed.manifest = &replay.header().manifest;
  const std::string copy = (run.dir / "copy.jsonl").string();
  replayed.write_recording(copy);
  std::ifstream a(saved, std::ios::binary), b(copy, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}));
  replayed.view_layer = 0;
  replayed.view_head = -1;
  replayed.write_recording(copy);
  EXPECT_EQ(RecordingReader(copy).header().view_layer, 0);
  EXPECT_EQ(RecordingReader(copy).header().view_head, -1);
  EXPECT_THROW(replayed.write_logs((run.dir / "replay-logs").string()), Error);
  EXPECT_THROW(RunExport{}.write_recording((run.dir / "nothing.jsonl").string()), Error);
}
