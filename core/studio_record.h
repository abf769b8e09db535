#pragma once
// What H2O Studio keeps of each engine step: everything its pictures and
// numbers are computed from, and nothing that needs the model to recompute.
// The live app and a replay feed the same StepRecords to the same Analyzer,
// so a replay shows the same numbers with no model and no GPU.
//
// Recording file format (JSON Lines, UTF-8, one object per line):
//   line 1   {"format":"h2o-studio-recording","version":1,"header":{
//              "manifest": <h2o::describe_run>, "mode": "stream"|"forced",
//              "title": "<model name>", "layers": L, "heads": H, "kv_heads": K,
//              "policies": [{"kind","sinks","window","heavy","recent","slack","rolling"}...]}}
//   lines    {"step": n, "phase": "prefill"|"decode"|"forced", "prompt": i,
//             "turn_start": b, "turn_end": b, "engine_s": seconds of engine time so far,
//             "sessions": [{"session", "fed": [ids], "fed_text": [texts], "token", "text", "eos",
//               "cached_tokens", "live_bytes", "allocated_bytes", "step_ms", "tok_s",
//               "evictions": [[layer, kv_head, position]...],
//               "nll": [...], "kl": [...], "agree": [...],
//               "attention"?: {"layer", "rows", "query": [...], "keys": [[per KV head]...],
//                              "probs": [[per query head, rows x keys]...], "top_share": [per query head]},
//               "scores"?: {"layer", "positions": [[per KV head]...], "values": [[per KV head]...]}}]}
//   last     {"totals": <h2o::describe_totals>}   (optional)
// Texts that are not valid UTF-8 (partial byte pieces) are stored as arrays of
// byte values so that they read back byte for byte. Numbers round-trip exactly.
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "engine.h"

namespace h2o {

struct RecordedScores {
  int layer = 0;
  std::vector<std::vector<int32_t>> positions;  // per KV head, slot order
  std::vector<std::vector<float>> values;       // per KV head, accumulated scores
};

struct SessionRecord {
  int session = 0;
  std::vector<int> fed;
  std::vector<std::string> fed_text;
  int token = -1;
  std::string text;
  bool eos = false;
  int cached_tokens = 0;
  int64_t live_bytes = 0, allocated_bytes = 0;
  double step_ms = 0, decode_tokens_per_s = 0;
  std::vector<EvictionEvent> evictions;
  std::vector<double> nll, kl;
  std::vector<int> agree;
  std::optional<AttentionCapture> attention;  // trimmed (see kRecordedKeys)
  std::vector<float> top_share;               // per query head, on the untrimmed capture
  std::optional<RecordedScores> scores;
  std::string stopped;  // SessionStep::error: the session stopped here
};

struct StepRecord {
  int64_t step = 0;
  Phase phase = Phase::Done;
  int prompt_index = -1;
  bool turn_start = false, turn_end = false;
  double engine_seconds = 0;  // engine time since the run began, pauses excluded
  std::vector<SessionRecord> sessions;
};

struct RecordingHeader {
  nlohmann::json manifest;  // describe_run
  std::string mode = "stream";
  std::string title;
  int layers = 0, heads = 0, kv_heads = 0;
  std::vector<PolicyConfig> policies;
};

// Attention keys a record keeps per KV head (the first kRecordedFirstKeys and the latest rest).
inline constexpr int kRecordedKeys = 192;
inline constexpr int kRecordedFirstKeys = 8;
// The k of the sparsity meter: share of attention on the top-k keys.
inline constexpr int kSparsityTopK = 8;

RecordingHeader make_header(const Engine& engine, const nlohmann::json& manifest, const std::string& mode);

// The record of one engine step. Scores of the captured layer are taken
// every few steps (more often while caches are small), so that recordings of
// long full-cache runs stay small; the live app uses exactly what is recorded.
StepRecord make_step_record(const Engine& engine, const StepReport& report, double engine_seconds);
// Back to the engine's report, for h2o::RunLog (no attention).
StepReport to_step_report(const StepRecord& record);

nlohmann::json to_json(const RecordingHeader& header);
RecordingHeader header_from_json(const nlohmann::json& j);  // throws Error
nlohmann::json to_json(const StepRecord& record);
StepRecord step_from_json(const nlohmann::json& j);  // throws Error

// Line 1 of a recording.
std::string recording_first_line(const RecordingHeader& header);

// Reads a recording line by line. Throws Error("<path>:<line>: ...").
class RecordingReader {
 public:
  explicit RecordingReader(const std::string& path);
  const RecordingHeader& header() const { return header_; }
  // The next step, or nullopt at the end (the totals line, if any, is kept).
  std::optional<StepRecord> next();
  const nlohmann::json& totals() const { return totals_; }

 private:
  std::string path_;
  std::unique_ptr<std::istream> in_;
  int line_ = 0;
  RecordingHeader header_;
  nlohmann::json totals_;
};

// JSON for a text that may hold partial UTF-8, and back.
nlohmann::json text_json(const std::string& text);
std::string text_from_json(const nlohmann::json& j);

}  // namespace h2o
