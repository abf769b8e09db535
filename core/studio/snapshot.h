#pragma once
// Plain snapshots of an H2O Studio run: everything one frame of the app
// draws, computed off the GUI thread by the Analyzer. Widgets copy numbers
// out of these; they never compute.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/policy/policy.h"
#include "core/studio/analytics.h"

namespace h2o {

struct Series {
  std::vector<double> x, y;
};

struct TokenCell {
  int64_t position = 0;
  std::string text;  // display text (newlines kept)
  Fate fate = Fate::Cached;
  bool prompt = false;  // part of a user turn (or the forced text), not generated
};

// Attention of the shown layer/head: recent query rows x cache slots.
struct HeatmapData {
  int layer = -1;
  std::vector<int32_t> columns;         // key stream positions, ascending
  std::vector<std::string> labels;      // their token texts, one line each
  std::vector<double> column_scores;    // accumulated score at the shown head (NaN: not known)
  std::vector<double> column_mass;      // attention on each column summed over the shown rows (label priority)
  std::vector<int32_t> query_positions; // one per row, oldest first
  std::vector<double> values;           // rows x columns, row-major; NaN: key not held by that head
  int rows() const { return int(query_positions.size()); }
  int cols() const { return int(columns.size()); }
  double at(int row, int col) const { return values[size_t(row) * columns.size() + size_t(col)]; }
};

struct PaneSnapshot {
  std::string policy;   // PolicyConfig::describe()
  PolicyConfig config;  // its kind names and colours the pane
  int budget = -1;
  int64_t stream_length = 0;
  int cached_tokens = 0;
  int64_t live_bytes = 0;
  double tokens_per_s = 0;
  int64_t generated = 0;
  double perplexity = NAN, agreement = NAN, mean_kl = NAN;
  std::vector<TokenCell> tokens;  // the latest, oldest first
  HeatmapData heatmap;
  SurvivalRaster raster;
  ScoreRank score_rank;
  double sparsity = NAN;  // latest top-k share at the shown head
  Series sparsity_history;
  std::string stopped;    // why this session stopped early (out of KV memory); empty while it runs
};

struct EvictionAt {
  int layer = 0, kv_head = 0;
  int64_t step = 0;
};

// A clicked token: its score over time and when each policy let it go.
struct InspectionSnapshot {
  int64_t position = -1;
  bool followed = false;  // nobody clicked: this is H2O's top heavy hitter, picked anew each frame
  std::string text;
  struct PerPolicy {
    std::string policy;
    PolicyConfig config;
    int64_t born_step = -1;
    int score_layer = -1;
    std::vector<Series> score_by_kv_head;  // (step, accumulated score) at score_layer
    std::vector<EvictionAt> evictions;     // every layer and KV head that evicted it
    Fate fate_now = Fate::Unborn;          // at the shown layer/head
  };
  std::vector<PerPolicy> policies;
};

struct StudioSnapshot {
  int64_t step = -1;  // last step ingested
  int64_t steps_ingested = 0;
  double engine_seconds = 0;
  std::string title, mode, phase;
  int prompt_index = -1;
  int layers = 0, heads = 0, kv_heads = 0;
  int shown_layer = 0, shown_head = -1, capture_layer = -1;
  int top_k = 8;
  std::vector<PaneSnapshot> panes;
  // One per policy, in pane order.
  std::vector<Series> kv_bytes;    // x: tokens in the stream, y: live KV bytes
  std::vector<Series> throughput;  // x: engine seconds, y: decode tokens/s
  std::vector<Series> perplexity;  // x: scored tokens, y: running perplexity (forced mode)
  std::vector<Series> agreement;   // x: scored tokens, y: running top-1 agreement with full
  InspectionSnapshot inspection;
};

}  // namespace h2o
