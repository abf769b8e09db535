#pragma once
// Turns a run's StepRecords into StudioSnapshots. It keeps, per policy, the
// whole history of the stream compactly (stream_history.h: tokens, when each
// position was fed and when each (layer, KV head) evicted it, every step's
// numbers), the curves, bounded score histories, and the newest captures
// (capture_window.h). A snapshot is then a pure function of that state, the
// step chosen on the timeline and the view the user picked; for a step older
// than the newest, the caller hands it the captures around that step, read
// back from the recording. The live app and a replay feed it the same
// records, hence the same pictures.
#include <deque>
#include <map>
#include <memory>
#include <ostream>
#include <string_view>
#include <vector>

#include "core/analysis/capture_window.h"
#include "core/analysis/needle_watch.h"
#include "core/analysis/snapshot.h"
#include "core/analysis/stream_history.h"
#include "core/base/packed_bytes.h"
#include "core/recording/checkpoint_stream.h"
#include "core/recording/recording.h"
#include "core/runtime/run_loop.h"

namespace h2o {

// What the user is looking at; the rest of a snapshot does not depend on it.
struct ViewSelection {
  int layer = 0;
  int head = -1;                  // query head, or -1 for the mean over heads
  int64_t step = -1;              // the step shown; -1: the newest
  int64_t inspect_position = -1;  // the clicked token; -1: follow H2O's top heavy hitter
  int inspect_pane = -1;          // the pane it was clicked in (each pane's stream has its own tokens); -1: the first
  int64_t text_first = -1;        // first position of the text window; -1: the stream's end
  int max_tokens = 700;
  int heatmap_rows = 32;
  int heatmap_columns = 96;
  // The rasters' cells: at most one per pixel the widget has (so that nothing
  // falls between pixels), the overview over the whole stream, the detail over
  // `detail_positions` from `detail_first`.
  int overview_columns = 480, overview_rows = 64;
  int64_t detail_first = -1;      // first position of the raster detail; -1: the latest
  int detail_positions = 320, detail_columns = 320, detail_rows = 120;
  int64_t query_step = -1;        // the head view's query: this step's (-1: the shown step's)
  int head_view_keys = 12;
  int model_view_policy = -1;     // -1: the first policy that keeps tokens by accumulated score
  int sparsity_points = 240;
};

class Analyzer final : public StepSink {
 public:
  // Score histories (the inspector's lines) are kept for the latest
  // `score_history_horizon` positions, the sinks, each read's top scores
  // (the heavy hitters) and the pinned (clicked) position, at most 64
  // samples each: bounded however long the run. Each policy keeps every
  // head's eviction steps exactly for the newest `exact_head_positions`
  // positions or more, and a summary of the older ones (head_evictions.h).
  // Its window keeps a state's KV head whole up to `state_whole_entries`
  // entries, and past that what the views draw of it (held_state.h).
  explicit Analyzer(RecordingHeader header, int64_t score_history_horizon = 4096,
                    int64_t exact_head_positions = HeadEvictions::kExactPositions,
                    size_t state_whole_entries = HeldState::kWholeEntries);
  void write(const StepRecord& record) override { ingest(record); }
  void ingest(const StepRecord& record);
  // The view at view.step (the newest when -1 or later). For an older step,
  // `window` holds the captures around it (load_capture_window); without it
  // the pictures that need attention say it was not recorded.
  StudioSnapshot snapshot(const ViewSelection& view, const CaptureWindow* window = nullptr) const;
  const RecordingHeader& header() const { return header_; }
  int64_t steps_ingested() const { return int64_t(steps_.size()); }
  int64_t first_step() const { return first_step_; }
  int64_t latest_step() const { return first_step_ + int64_t(steps_.size()) - 1; }
  // Engine seconds at the end of `step` (a replay's pace).
  double engine_seconds_at(int64_t step) const;
  const CaptureWindow& live_window() const { return live_; }
  // A window like the live one (policies, states held alike), empty.
  CaptureWindow empty_window() const { return CaptureWindow(header_.policies, state_whole_entries_); }
  size_t state_whole_entries() const { return state_whole_entries_; }
  // After steps were ingested skimmed (RecordingReader::skim_below): the
  // window of captures at its newest step, read back whole (load_capture_window).
  void restore_live_window(CaptureWindow window) { live_ = std::move(window); }
  // Keep this position's score history from now on (the user clicked it).
  void pin(int64_t position) { pinned_ = position; }
  // Bytes of the whole-history state (stream_history.h), and of everything bounded besides.
  int64_t history_bytes() const;
  // One policy's whole history (in the header's order).
  const PolicyHistory& history(size_t policy) const { return histories_.at(policy); }
  int64_t bounded_bytes() const;
  // ---- checkpoints (analyzer_checkpoint.cpp) ----
  // Everything ingested so far but the window of newest captures (which the
  // steps read after a checkpoint fill again), as one zstd frame on `out`:
  // what a recording whose spool kept only its newest steps opens on.
  // Returns the bytes written. Throws Error when `out` fails.
  int64_t save_checkpoint(std::ostream& out) const;
  // Into an analyzer that has ingested nothing: the state save_checkpoint
  // wrote, checked against this analyzer's header; it then ingests the step
  // after the checkpoint's. Throws Error, leaving this analyzer as it was.
  void restore_checkpoint(std::string_view frame, size_t max_bytes);
  // Seconds spent ingesting so far, and of them writing the whole history (stream_history.h).
  double ingest_seconds() const { return ingest_s_; }
  double history_seconds() const { return history_s_; }

 private:
  // A series thinned by halves once it holds `cap` points, so long runs stay cheap to draw.
  struct ThinnedSeries {
    Series s;
    std::vector<int32_t> step;
    int every = 1, skipped = 0;
    void push(int64_t at, double x, double y);
    Series until(int64_t last) const;  // the points of steps <= last
    void save(PackedWriter& w) const;
    void load(PackedReader& r);
  };
  // Per-step shares of every head, merged into means of 2^k steps once long.
  struct ShareHistory {
    struct Bin {
      int64_t step = 0;  // the last step merged in
      std::vector<float> mean;
      int n = 0;
    };
    std::vector<Bin> bins;
    int per_bin = 1;
    void add(int64_t step, const std::vector<float>& shares);
    void save(PackedWriter& w) const;
    void load(PackedReader& r);
  };
  struct ScoreSample {
    int32_t step;
    float score;
  };
  struct PolicyExtras {
    std::string pending_text;
    int64_t generated = 0;
    double nll_sum = 0, kl_sum = 0;
    int32_t scored = 0, agreed = 0, compared = 0;
    bool pending = false, stopped = false;
    int score_history_layer = -1;
    std::map<int64_t, std::vector<std::vector<ScoreSample>>> score_history;  // position -> per KV head
    ThinnedSeries kv_bytes, throughput, perplexity, agreement, kl;
    ShareHistory shares;
    void save(PackedWriter& w) const;
    void load(PackedReader& r, const RecordingHeader& header);
  };
  struct StepInfo {
    double engine_seconds = 0;
    int32_t prompt = -1;
    Phase phase = Phase::Done;
  };

  void ingest_session(size_t index, const StepRecord& record, const SessionRecord& s);
  void record_scores(size_t index, int64_t step, const LayerState& scores);
  PaneSnapshot pane(size_t index, const ViewSelection& view, int64_t step, const CaptureWindow* window) const;
  HeatmapData heatmap(size_t index, const ViewSelection& view, int64_t step, const CaptureWindow* window) const;
  InspectionSnapshot inspection(const ViewSelection& view, int64_t step, const CaptureWindow* window) const;
  // The position and the pane of the top heavy hitter, or {-1, -1}.
  std::pair<int64_t, int> top_heavy_hitter(const ViewSelection& view, int64_t step, const CaptureWindow* window) const;
  // A position's score lines up to `step` from its samples per KV head (InspectionSnapshot::ScoreLine).
  static std::vector<InspectionSnapshot::PerPolicy::ScoreLine> score_lines(
      const std::vector<std::vector<ScoreSample>>& per_head, int64_t step, int kv_shown);
  int group() const { return header_.heads / header_.kv_heads; }
  // Whether a step in (after, last] was thinned (StepRecord::thinned).
  bool thinned_between(int64_t after, int64_t last) const;
  int shown_kv(const ViewSelection& view) const { return view.head >= 0 ? view.head / group() : -1; }

  RecordingHeader header_;
  int64_t horizon_;
  size_t state_whole_entries_;
  std::vector<PolicyHistory> histories_;
  std::vector<PolicyExtras> extras_;
  std::vector<StepInfo> steps_;
  int64_t first_step_ = 0;
  CaptureWindow live_;
  int64_t pinned_ = -1;
  double ingest_s_ = 0, history_s_ = 0;
  std::vector<int32_t> thinned_;  // the thinned steps (StepRecord::thinned), ascending
  NeedleWatch needle_;            // the app's needle and its asks
};

// The analyzer a replay of `reader`'s file starts from: of its header, and
// where the file holds a ring's checkpoint (recording.h), with that history
// restored. Throws Error naming the file's line 2.
// `max_checkpoint_bytes`: the most its checkpoint may unpack to (the fuzz target's is small).
std::unique_ptr<Analyzer> replay_analyzer(const RecordingReader& reader, size_t max_checkpoint_bytes = kMaxCheckpointBytes);

// Display text of a token piece: control characters shown as symbols.
std::string display_text(const std::string& piece);

}  // namespace h2o
