#pragma once
// The fuzz target of H2O Studio recordings (a file a user opens in the app):
// the reader, then every step it gives through the analyzer and a snapshot,
// as a replay shows them, and the seek path that skims the steps it passes.
// Any input must replay, or fail with an h2o::Error; anything else (a crash,
// a sanitizer report, another exception) is a bug. Apart from fuzz_targets.h
// because it needs the studio's library, which the other targets do not.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/analysis/analyzer.h"
#include "core/base/error.h"
#include "core/recording/recording.h"
#include "core/studio/studio_setup.h"
#include "core/studio/timeline.h"
#include "fuzz_support.h"

namespace h2o::fuzz {

inline void run_recording(const uint8_t* data, size_t size) {
  const std::string path = write_input("run.h2orec.jsonl", data, size);
  // Small views: what a replay draws, at any layer and head the header allows.
  const auto view = [](const RecordingHeader& h, int64_t step) {
    ViewSelection v;
    v.layer = h.layers - 1;
    v.head = h.heads - 1;
    v.step = step;
    v.max_tokens = 64;
    v.overview_columns = v.detail_columns = 64;
    return v;
  };
  for (const bool skim : {false, true}) {
    try {
      RecordingReader reader(path);
      (void)studio_config_from_json(reader.header().settings);  // the controls a replay opens on
      // A ring's checkpoint restored as a replay restores it, within a bound a fuzzer's bytes can reach.
      const std::unique_ptr<Analyzer> restored = replay_analyzer(reader, size_t(64) << 20);
      Analyzer& analyzer = *restored;
      const auto one = [&] {
        const auto record = reader.next();
        if (record) analyzer.ingest(*record);
        return record.has_value();
      };
      if (skim) read_replay_to(reader, analyzer, 1 << 20, one);
      else
        for (int i = 0; i < 4096 && one(); ++i) (void)analyzer.snapshot(view(reader.header(), -1));
      (void)analyzer.snapshot(view(reader.header(), -1));
      (void)analyzer.snapshot(ViewSelection{});
      if (analyzer.steps_ingested() > 0) {
        const CaptureWindow window =
            load_capture_window(path, reader.index(), reader.version(), reader.header(), analyzer.first_step());
        (void)analyzer.snapshot(view(reader.header(), analyzer.first_step()), &window);
      }
    } catch (const h2o::Error&) {
    }
  }
}

}  // namespace h2o::fuzz
