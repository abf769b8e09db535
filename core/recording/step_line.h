#pragma once
// A recording's lines read back (the format: recording.h) with simdjson's
// on-demand parser: reading is most of a replay's and a seek's time, and
// simdjson parses several times faster than a JSON tree does and skips, at
// memory speed, what it is not asked for. Writing stays with nlohmann
// (recording.cpp); the two meet in the round-trip tests.
#include <cstdint>
#include <optional>
#include <string>

#include "core/policy/policy.h"
#include "core/runtime/step_record.h"

namespace h2o {

// How much of a step to read.
enum class StepDetail {
  Full,
  // What the analyzer's whole history needs — numbers, tokens, evictions,
  // each capture's layer, head, rows and top-k shares, the first layer state
  // (the watched layer's score history) — without the captures' query and key
  // positions and probabilities or the other layers' states. A seek reads
  // the steps it passes over this way and the window around the step it
  // shows whole (load_capture_window).
  Skim,
};

// One non-header line: a step, or the totals line (left to the caller: it is read once).
struct RecordingLine {
  std::optional<StepRecord> step;
  bool skimmed = false;  // the step was read as StepDetail::Skim
  bool totals = false;
};

// What a recording's header says of its model and sessions: what bounds the
// counts a line's payloads may declare (PayloadBounds), checked before they are read.
struct LineShape {
  int layers = 0, heads = 0, kv_heads = 0;
  std::vector<EvictionRule> rules;  // each session's policy's
};

// Parses `line`, a record as read_record gives it (recording.h: the line and,
// in version 4, a newline and the step's payloads), given room for
// simdjson's padding, hence not const.
// `skim_below`: a step numbered below it is read as StepDetail::Skim (-1: none).
// `shape`: the recording's (null: payloads bounded by their bytes alone).
// Throws Error saying what is wrong (the caller names the file and line).
RecordingLine parse_recording_line(std::string& line, int version, int64_t skim_below = -1,
                                   const LineShape* shape = nullptr);

// A step line read whole.
StepRecord parse_step_line(std::string& line, int version = 2, const LineShape* shape = nullptr);

}  // namespace h2o
