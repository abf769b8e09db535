#pragma once
// Turns a run's StepRecords into StudioSnapshots. It keeps, per policy, the
// stream's tokens, when each position was fed and when each (layer, KV head)
// evicted it, the latest attention rows and scores, and the curves; a
// snapshot is then a pure function of that state and the view the user picked.
// The live app and a replay feed it the same records, hence the same pictures.
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "core/studio/recording.h"
#include "core/studio/run_loop.h"
#include "core/studio/snapshot.h"

namespace h2o {

// What the user is looking at; the rest of a snapshot does not depend on it.
struct ViewSelection {
  int layer = 0;
  int head = -1;  // query head, or -1 for the mean over heads
  int64_t inspect_position = -1;
  int max_tokens = 700;
  int heatmap_rows = 32;
  int heatmap_columns = 96;
  int raster_steps = 160;
  int raster_positions = 640;
  int score_points = 300;
};

class Analyzer final : public StepSink {
 public:
  // Score histories of tokens that left a cache are kept for the latest
  // `evicted_history_kept` stream positions (what the text view and the raster
  // can show) and then dropped, so an endless run stays flat; tokens still
  // cached (sinks, old heavy hitters) keep theirs.
  explicit Analyzer(RecordingHeader header, int64_t evicted_history_kept = 4096);
  void write(const StepRecord& record) override { ingest(record); }
  void ingest(const StepRecord& record);
  StudioSnapshot snapshot(const ViewSelection& view) const;
  const RecordingHeader& header() const { return header_; }
  int64_t steps_ingested() const { return steps_; }

 private:
  // A series thinned by halves once it holds `cap` points, so long runs stay cheap to draw.
  struct ThinnedSeries {
    Series s;
    int every = 1, skipped = 0;
    void push(double x, double y);
  };
  struct ScoreSample {
    int64_t step;
    float score;
  };
  struct PolicyState {
    PolicyConfig policy;
    EvictionRule rule;
    std::vector<int> tokens;
    std::vector<std::string> texts;
    std::vector<uint8_t> prompt;
    std::vector<int64_t> birth_step;
    std::vector<std::vector<int64_t>> evict_step;  // [layer * kv_heads + kv_head][position], -1 while held
    bool answer_pending = false;                   // a sampled token waits to be fed
    int pending_token = -1;
    std::string pending_text;
    int cached_tokens = 0;
    int64_t live_bytes = 0, generated = 0;
    std::string stopped;
    double tokens_per_s = 0;
    double nll_sum = 0, kl_sum = 0;
    int64_t scored = 0, agreed = 0, compared = 0;
    std::map<int, std::deque<AttentionCapture>> attention;  // per layer, newest last
    std::deque<std::pair<int64_t, std::vector<float>>> top_share;
    std::map<int, std::shared_ptr<const LayerState>> scores;  // the latest state of each layer read
    int score_history_layer = -1;
    // position -> per KV head samples of the captured layer's score
    std::map<int64_t, std::vector<std::vector<ScoreSample>>> score_history;
    ThinnedSeries kv_bytes, throughput, perplexity, agreement;
  };

  void ingest_session(PolicyState& p, const StepRecord& record, const SessionRecord& s);
  void record_scores(PolicyState& p, int64_t step, const LayerState& scores);
  const LayerState* scores_of(const PolicyState& p, int layer) const;
  PaneSnapshot pane(const PolicyState& p, const ViewSelection& view) const;
  HeatmapData heatmap(const PolicyState& p, const ViewSelection& view) const;
  InspectionSnapshot inspection(const ViewSelection& view) const;
  // The heavy hitter with the highest accumulated score (of the first policy
  // that keeps tokens by accumulated score: H2O) at the shown layer/head; -1 if none yet.
  int64_t top_heavy_hitter(const ViewSelection& view) const;
  // Eviction steps of every position at the shown layer/head (mean: held by any KV head).
  std::vector<int64_t> shown_evictions(const PolicyState& p, const ViewSelection& view) const;
  int group() const { return header_.heads / header_.kv_heads; }

  RecordingHeader header_;
  int64_t evicted_history_kept_;
  std::vector<PolicyState> policies_;
  int64_t last_step_ = -1, steps_ = 0;
  double engine_seconds_ = 0;
  Phase phase_ = Phase::Done;
  int prompt_index_ = -1;
  int capture_layer_ = -1;  // the layer of the latest step's first capture
};

// Display text of a token piece: control characters shown as symbols.
std::string display_text(const std::string& piece);

}  // namespace h2o
