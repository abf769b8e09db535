#pragma once
// What the app writes of a run — its recording, its logs, a report — and the
// one RunInfo a run the app started describes itself with, in plain C++ (the
// app's worker only says how it went).
#include <cstdint>
#include <string>
#include <vector>

#include "core/recording/recording.h"
#include "core/runtime/engine.h"
#include "core/studio/run_log.h"
#include "core/studio/studio_setup.h"

namespace h2o {

// How the app describes a run it started (its manifest, its logs): the
// command it stands for ("stream", or "eval" in teacher-forced mode) and its
// files. `hash_files`: quick for small files, a stall at the start of big ones.
RunInfo studio_run_info(const StudioConfig& config, const StudioInputs& inputs, bool hash_files);

// A run as the app holds it now: a live run (its engine and the spool every
// step was recorded to) or a replay (its recording).
struct RunExport {
  const Engine* engine = nullptr;           // live runs
  RecordingWriter* spool = nullptr;         // live runs: every step so far, up to its limit
  const RecordingReader* replay = nullptr;  // replays
  std::string recording;                    // the spool's file, or the replay's
  const nlohmann::json* manifest = nullptr; // what the run began with (describe_run)
  RunInfo info;                             // live runs: studio_run_info
  std::string state = "paused";             // "running" or "paused": how a live run's logs end
  int64_t steps = 0;                        // steps the app has seen
  // The view when the recording is saved, which its replay opens on (-1 layer: as recorded).
  int view_layer = -1, view_head = -1;
  std::vector<std::string> needle;  // the report's needle in words (needle_report_lines); empty: none

  // The recording, atomically: a replay's file or a live run's spool, with
  // the view at save time in its header, and the engine's totals when a live
  // run's spool holds every step. Throws Error.
  void write_recording(const std::string& path) const;
  // Steps, evictions and manifest as RunLog writes them (live runs only). Throws Error.
  void write_logs(const std::string& dir) const;
  // Completes `staging`, which already holds `plots`, with the logs, the
  // recording and summary.md, then renames it to `dir`: only a complete
  // report takes its name. On failure removes `staging` and throws.
  // `written`: the report's instant (utc_timestamp), the folder's stamp too.
  void write_report(const std::string& staging, const std::string& dir, const std::vector<std::string>& plots,
                    const std::string& written) const;
};

}  // namespace h2o
