// h2o-bench-replay: how long the app takes to seek a freshly opened replay
// to a step (the timeline's slider dragged far ahead): open the recording,
// count its steps, read on to the step, as EngineWorker does (read_replay_to:
// the steps passed over skimmed, the window around the step read back whole),
// next to reading every step whole. A benchmark, not a timed test.
//
// The recording is made first when the file does not exist: the demo model
// (kjv-1M, or --model), four policies (or --policies), the app's capture
// schedule, --steps steps, written under a temporary name and renamed when
// whole, so that an interrupted run (a signal, an error) leaves no recording
// for the next to take as made, and two runs at once never read a half file.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "app/cli_flags.h"
#include "core/analysis/analyzer.h"
#include "core/base/atomic_file.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/signal_cleanup.h"
#include "core/base/system_limits.h"
#include "core/recording/capture_schedule.h"
#include "core/recording/recording.h"
#include "core/runtime/run_loop.h"
#include "core/studio/assets.h"
#include "core/studio/studio_setup.h"
#include "core/studio/timeline.h"

using namespace h2o;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A live run of the demo as the app records it: every step, the watched layer's captures and the scheduled rest.
void make_recording(const std::string& path, int64_t steps, const std::string& model, const std::string& policies) {
  StudioConfig config;
  const DefaultInputs defaults = default_inputs(find_assets_dir());
  config.model = model.empty() ? defaults.model : model;
  config.tokenizer = model.empty() ? defaults.tokenizer : "";
  config.prompts = defaults.prompts;
  config.policies = flag_list(policies, "--policies", "policy");
  const StudioInputs inputs = load_studio_inputs(config);
  auto engine = make_studio_engine(config, inputs, make_backend(inputs.model, studio_backend_options(config)));
  const StudioCaptureSchedule schedule(0);
  EngineSource source(*engine, &schedule);
  // The header the app writes: its settings and the view, which a replay opens on.
  RecordingHeader header = make_header(*engine, nlohmann::json::object(), "stream");
  header.settings = studio_config_json(config);
  header.view_layer = 0;
  header.view_head = -1;
  AtomicFile file(path);  // its temporary: removed on an error or a signal, renamed into place when whole
  file.finish();
  {
    RecordingWriter writer(file.temporary(), header);
    RunLoop loop(source);
    loop.add_sink(writer);
    std::fprintf(stderr, "making %s: %lld steps of %s...\n", path.c_str(), static_cast<long long>(steps),
                 model_display_name(config.model).c_str());
    for (int64_t i = 0; i < steps; ++i)
      if (!loop.step()) break;
    writer.flush();
    if (writer.stopped()) fail(path, writer.stop_reason());  // a full disk: the temporary goes with `file`
  }
  file.publish();
}

// Every step of `path` read once, skimmed (the fastest read): a damaged, missing, repeated or
// out-of-order step is refused here with its line, before any seek is timed (a seek past the damage
// would otherwise say "past the end"). Returns the steps the file holds.
int64_t checked_steps(const std::string& path) {
  RecordingReader reader(path);
  reader.skim_below(std::numeric_limits<int64_t>::max());
  int64_t steps = 0;
  while (reader.next()) ++steps;
  return steps;
}

struct Timing {
  double open_s = 0, read_s = 0;
};

// Opens `path` as the app does and reads on to `step`, skimming or not.
Timing seek(const std::string& path, int64_t step, bool skim) {
  const auto t0 = std::chrono::steady_clock::now();
  RecordingReader reader(path);
  count_recorded_steps(path);
  const std::unique_ptr<Analyzer> restored = replay_analyzer(reader);
  Analyzer& analyzer = *restored;
  RunLoop loop(reader);
  loop.add_sink(analyzer);
  Timing t;
  t.open_s = seconds_since(t0);
  const auto one = [&] { return loop.step().has_value(); };
  if (skim) read_replay_to(reader, analyzer, step, one);
  else
    while ((analyzer.steps_ingested() == 0 || analyzer.latest_step() < step) && one()) {
    }
  t.read_s = seconds_since(t0) - t.open_s;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  install_signal_cleanup();  // a signal while the recording is made removes its temporary
  CLI::App app{"Seeking a freshly opened replay: seconds to open it and read on to a step, skimmed and whole"};
  std::string path = "/tmp/h2o-bench-replay.jsonl", seeks, model, policies = "full,streaming,h2o,tova";
  int64_t steps = 3300;
  int repeats = 3;
  cli::one_line_flag_errors(app, "h2o-bench-replay");
  app.add_option("--recording", path, "the recording (made first when absent)");
  cli::add_whole_flag(&app, "steps", steps, 1, 1000000, "steps of the recording made when absent");
  app.add_option("--model", model, "the model of the recording made (default: the demo's)");
  app.add_option("--policies", policies, "the panes of the recording made");
  app.add_option("--seek", seeks, "steps to seek to, comma-separated (default: 30 % and 90 % of the recording's steps)");
  cli::add_whole_flag(&app, "repeats", repeats, 1, 100, "times each seek runs; the best is reported");
  CLI11_PARSE(app, argc, argv);
  try {
    // Checked before a recording is made: a step is a whole number from 0.
    std::vector<int> seek_steps;
    if (app.count("--seek")) {
      seek_steps = parse_flag_ints(seeks, "--seek", "step", 0, std::numeric_limits<int>::max());
    }
    if (!std::filesystem::exists(path)) make_recording(path, steps, model, policies);
    const double mib = double(std::filesystem::file_size(path)) / double(1 << 20);
    const int64_t recorded = checked_steps(path);
    // Not given: steps this recording has, where 1000 and 3000 are in the demo's 3300 (a shorter
    // recording made with --steps 400 failed the default seeks).
    if (!app.count("--seek")) seek_steps = {int(recorded * 3 / 10), int(recorded * 9 / 10)};
    for (const int step : seek_steps)
      if (step >= recorded)
        fail("--seek", "step " + std::to_string(step) + " is past the end of " + path + " (" +
                           std::to_string(recorded) + " steps recorded)");
    std::printf("recording %s: %.0f MiB, %lld steps; %d CPUs\n\n", path.c_str(), mib, static_cast<long long>(recorded),
                hardware_threads());
    std::printf("| seek to | open (s) | skimmed (s) | whole (s) | skimmed MiB/s |\n|---:|---:|---:|---:|---:|\n");
    for (const int64_t step : seek_steps) {
      Timing skimmed{1e9, 1e9}, whole{1e9, 1e9};
      for (int r = 0; r < repeats; ++r) {
        const Timing a = seek(path, step, true), b = seek(path, step, false);
        if (a.read_s < skimmed.read_s) skimmed = a;
        if (b.read_s < whole.read_s) whole = b;
      }
      const double share = double(std::min(step + 1, recorded)) / double(recorded);
      std::printf("| %lld | %.3f | %.3f | %.3f | %.0f |\n", static_cast<long long>(step), skimmed.open_s,
                  skimmed.read_s, whole.read_s, mib * share / skimmed.read_s);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "h2o-bench-replay: %s\n", e.what());
    return 1;
  }
  return 0;
}
