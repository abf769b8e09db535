#pragma once
// H2O Studio recordings: a run's StepRecords in one JSON Lines file, enough
// to replay every picture and number with no model and no GPU. The live app
// and a replay feed the same records to the same Analyzer.
//
// Format, version 4: one JSON object per line (UTF-8), a step's binary
// payloads after its line. (Version 3, still read, wrote each payload as base64
// text in its session's "payload"; version 2 wrote the payload's parts as JSON:
// "heads": [[layer, kv_head, position]...] in "evictions", and "attention" and
// "states" as below.)
//   line 1   {"format":"h2o-studio-recording","version":4,"header":{
//              "manifest": <h2o::describe_run>, "mode": "stream"|"forced",
//              "title": "<model name>", "layers": L, "heads": H, "kv_heads": K,
//              "policies": [<h2o::policy_json>...],
//              "context"?: the model's trained context, "view"?: {"layer", "head"} shown when
//              recording began, "settings"?: the app's settings (studio_config_json)}}
//   steps    {"tail"?: N bytes of payloads after this line (first, so that a reader
//               finds it before parsing the line), "step": n, "phase": "prefill"|"decode"|"forced",
//             "prompt": i, "turn_start": b, "turn_end": b, "engine_s": seconds of engine time so far,
//             "thinned"?: true (the app's pipeline kept only the watched layer's capture),
//             "sessions": [{"session", "fed": [ids], "position": first fed position, "fed_text": [texts],
//               "token", "text", "eos",
//               "cached_tokens", "quantized_tokens"? (where any are), "live_bytes", "allocated_bytes", "step_ms", "tok_s",
//               "evictions": {"all": [positions]},
//               "nll": [...], "kl": [...], "agree": [...],
//               "payload_bytes"?: n, this session's payload's size in the tail (step_payload.h:
//                 the evictions by (layer, KV head), the attention captures {layer, head, rows,
//                 query positions, key positions per KV head, probabilities per captured head
//                 (rows x keys, 8-bit codes), top-k shares} and the layer states {layer,
//                 positions and scores per KV head}),
//               "stopped"?: "why", "needle"?: [begin, end] (the planted needle's positions, on the step
//               that fed its first tokens)}],
//             "needle"?: {"text", "question", "answer", "question_ids", "answer_ids"} (planted: that step),
//             "asked"?: [{"answer_nll", "answer_tokens", "exact", "survival_answer", "said"}...] (an ask
//               after this step, one per session; core/studio/needle_source.h)}
//            then, where "tail" is given, its N bytes (the sessions' payloads in their order)
//            and a newline.
//   last     {"totals": <h2o::describe_totals>}   (optional)
// A live run's spool that reached its limit keeps its newest steps (a ring);
// the file then holds, between line 1 and its first step,
//   checkpoint {"tail": N, "checkpoint": {"step": s}} then N bytes and a newline:
//            the analyzer's whole history through step s (Analyzer::save_checkpoint),
//            which a replay restores before it reads step s + 1, the first step kept whole.
// The app records, each step, its watched layer's attention (every query head,
// the last row, the first 8 and latest keys up to 192) and, every 8 steps, a
// trimmed capture of every other layer (48 keys): enough to show any layer and
// head later (core/recording/capture_schedule.h).
// Texts that are not valid UTF-8 (partial byte pieces) are stored as arrays of
// byte values so that they read back byte for byte. Numbers round-trip exactly.
// Version-1 files (one attention capture, "scores", evictions as a list) are read too.
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/base/thread_pool.h"
#include "core/recording/step_line.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"

namespace h2o {

// The version this build writes (it reads 1 to this).
inline constexpr int kRecordingVersion = 4;
// The most sessions a header may name: the format's own bound on what a file
// can make a reader allocate, not the app's pane count (StudioRun::replay checks that).
inline constexpr int kMaxRecordedSessions = 16;

struct RecordingHeader {
  nlohmann::json manifest;  // describe_run
  std::string mode = "stream";
  std::string title;
  int layers = 0, heads = 0, kv_heads = 0;
  std::vector<PolicyConfig> policies;
  int context = 0;                 // the model's trained context (0: not recorded)
  int view_layer = -1, view_head = -1;  // the view when recording began (-1 layer: not recorded)
  nlohmann::json settings;         // the app's settings (null: not recorded)
};

// Where each step's line starts in a recording (or the live spool), and which
// sessions read a layer state in it, so that any step can be read back
// without reading the file from its start. 9 bytes a step.
struct RecordingIndex {
  int64_t first_step = -1;
  std::vector<int64_t> offsets;
  std::vector<uint8_t> state_mask;  // bit s: session s (the first 8) read a layer state
  void add(int64_t offset, const StepRecord& record);
  bool has(int64_t step) const { return first_step >= 0 && step >= first_step && step <= last_step(); }
  int64_t last_step() const { return first_step + int64_t(offsets.size()) - 1; }
  int64_t offset(int64_t step) const { return offsets[size_t(step - first_step)]; }
  // The latest step at or before `step` where `session` read a state; -1 if none.
  int64_t last_state_at(int session, int64_t step) const;
  int64_t bytes() const { return int64_t(offsets.capacity() * 8 + state_mask.capacity()); }
  // The steps before `step` dropped, and every offset `shift` bytes earlier (a spool's ring turned).
  void drop_before(int64_t step, int64_t shift);
};

// Checks that a step read back fits its recording's header: sessions of its
// policies, layers, heads and KV heads of its model, captures and states whose
// arrays have the sizes their shapes give, no negative positions. Every line
// read is checked, so a recording that does not fit itself is one Error
// naming the line, never a crash further on. Throws Error.
// `skimmed`: read as StepDetail::Skim, its captures' arrays may be empty.
void check_step_fits(const StepRecord& record, const RecordingHeader& header, bool skimmed = false);

// The header's model and policies as the bounds of its lines' payloads (step_line.h).
LineShape line_shape(const RecordingHeader& header);

// Reads single lines of a recording by step, through an index, each checked
// against `header`. Throws Error("<path>: step N: ...").
class RecordingLines {
 public:
  RecordingLines(const std::string& path, const RecordingHeader& header, int version = 2);
  StepRecord read(const RecordingIndex& index, int64_t step);

 private:
  std::string path_;
  std::ifstream in_;
  int version_;
  RecordingHeader shape_;  // the header without its manifest and settings
  LineShape line_shape_;   // the same, as bounds for each line's payloads
};

// Lines in a file that hold steps (not the header, not the totals), counted fast.
int64_t count_recorded_steps(const std::string& path);

RecordingHeader make_header(const Engine& engine, const nlohmann::json& manifest, const std::string& mode);

nlohmann::json to_json(const RecordingHeader& header);
RecordingHeader header_from_json(const nlohmann::json& j);  // throws Error
// A step's record as a recording holds it, without its last newline: its
// line, and where it has payloads a newline and their bytes. Read back by
// parse_step_line (step_line.h).
std::string recording_step_line(const StepRecord& record);

// How a step's line begins when payloads follow it, and the most they may hold.
inline constexpr std::string_view kTailField = "{\"tail\":";
inline constexpr int64_t kMaxTailBytes = int64_t(1) << 30;

// Reads the next record of a recording into `record`: a line, and where the
// line says a tail follows, a newline and the tail's bytes (the newline after
// them read and dropped). False at the end of `in`. Throws Error where the
// tail's size is not one or the file ends inside it.
bool read_record(std::istream& in, std::string& record);

// Whether a record (read_record) is a checkpoint rather than a step.
bool is_checkpoint_record(std::string_view record);

// Line 1 of a recording.
std::string recording_first_line(const RecordingHeader& header);

// Reads a recording line by line. Throws Error("<path>:<line>: ...").
class RecordingReader final : public StepSource {
 public:
  explicit RecordingReader(const std::string& path);
  const RecordingHeader& header() const { return header_; }
  // The next step, or nullopt at the end (the totals line, if any, is kept).
  std::optional<StepRecord> next() override;
  std::string end_reason() const override { return "replay finished"; }
  const nlohmann::json& totals() const { return totals_; }
  // Every step read so far.
  const RecordingIndex& index() const { return index_; }
  int version() const { return version_; }
  const std::string& path() const { return path_; }
  // A ring's checkpoint (the format above): the step it holds the history
  // through (-1: none, the file holds every step) and its frame.
  int64_t checkpoint_step() const { return checkpoint_step_; }
  const std::string& checkpoint() const { return checkpoint_; }
  // Steps numbered below `step` are read skimmed (StepDetail::Skim: without
  // their attention probabilities and positions or their other layers'
  // states), which a seek passes over several times faster; -1: every step
  // whole. Lines read ahead skimmed that the new bound reads whole are read again.
  void skim_below(int64_t step);

 private:
  // A line read ahead and parsed (steps are parsed a batch at a time, on every
  // core: parsing is most of a replay's and a seek's time).
  struct Parsed {
    int64_t offset = 0;
    int line = 0;
    std::optional<StepRecord> record;
    bool skimmed = false;  // read as StepDetail::Skim
    bool is_totals = false;
    nlohmann::json totals;  // the totals line's
    std::string error;      // why the line could not be read
  };
  void read_ahead();

  // The cores that parse (up to 8), made once: a seek reads thousands of batches.
  std::unique_ptr<ThreadPool> pool_;
  RecordingIndex index_;
  std::string path_;
  std::unique_ptr<std::istream> in_;
  std::deque<Parsed> ahead_;
  int line_ = 0;
  int version_ = 2;
  int64_t skim_below_ = -1;
  RecordingHeader header_;
  LineShape shape_;  // the header's, bounding each line's payloads
  nlohmann::json totals_;
  int64_t checkpoint_step_ = -1;
  std::string checkpoint_;
  // Reads the checkpoint after line 1, if there is one.
  void read_checkpoint();
};

// Writes a run's steps to a recording file as they come, up to a size limit:
// past it (or when a write fails) it stops recording and says from which
// step — or, given a checkpoint to write (keep_newest), keeps the newest steps.
class RecordingWriter final : public StepSink {
 public:
  // Creates `path` (truncating it) and writes the header. Throws Error.
  RecordingWriter(const std::string& path, const RecordingHeader& header, int64_t limit_bytes = 0);
  ~RecordingWriter() override;
  void write(const StepRecord& record) override;
  // From now on the limit turns a ring. The room for steps is the limit less
  // line 1 and the checkpoint the file holds; once half of it holds steps,
  // the next step starts the ring's next span, and `checkpoint` then writes
  // the whole history before that step (Analyzer::save_checkpoint, called
  // from write(), so on the sinks' thread) to a file beside the spool. When
  // the next step would pass the limit, the file is rewritten as line 1, that
  // checkpoint and the steps from that span's start: the newest half of the
  // room or more, whole. It stops only where a checkpoint leaves no room.
  void keep_newest(std::function<void(std::ostream&)> checkpoint) { checkpoint_ = std::move(checkpoint); }
  // Whether it stopped, why, and the last step it holds (-1: none).
  bool stopped() const { return !stop_reason_.empty(); }
  const std::string& stop_reason() const { return stop_reason_; }
  int64_t last_step() const { return last_step_; }
  // The first step it holds whole (after a ring turned: its checkpoint's next), and how many times it turned.
  int64_t first_step() const { return index_.first_step; }
  int64_t turns() const { return turns_; }
  const std::string& path() const { return path_; }
  void flush() { out_.flush(); }
  // Every step written (what seeking in a live run reads back).
  const RecordingIndex& index() const { return index_; }
  // Bytes the file holds now (the header included; a turned ring's
  // checkpoint too), and the seconds spent turning steps into text and
  // handing that text to the file (turning the ring included).
  int64_t bytes() const { return bytes_; }
  double encode_seconds() const { return encode_s_; }
  double write_seconds() const { return write_s_; }

 private:
  // Before writing `step`'s `incoming` bytes: starts the ring's next span, or turns the ring.
  void make_room(int64_t step, int64_t incoming);
  // Whether half the room for steps holds steps (the next step starts a span).
  bool room_half_full() const;
  void start_span(int64_t step);
  void turn();

  RecordingIndex index_;
  int64_t bytes_ = 0;
  double encode_s_ = 0, write_s_ = 0;
  std::string path_, first_line_;
  std::ofstream out_;
  int64_t limit_ = 0, last_step_ = -1;
  std::string stop_reason_;
  // The ring (keep_newest).
  std::function<void(std::ostream&)> checkpoint_;
  int64_t prefix_bytes_ = 0;  // line 1 and the checkpoint, if any
  int64_t span_step_ = -1, span_offset_ = 0;  // where the next span starts (-1: not yet)
  int64_t turns_ = 0;
  std::string checkpoint_path() const { return path_ + ".checkpoint"; }
};

}  // namespace h2o
