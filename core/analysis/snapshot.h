#pragma once
// Plain snapshots of an H2O Studio run: everything one frame of the app
// draws, computed off the GUI thread by the Analyzer. Widgets copy numbers
// out of these; they never compute.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/analysis/analytics.h"
#include "core/analysis/survival.h"
#include "core/policy/policy.h"

namespace h2o {

struct Series {
  std::vector<double> x, y;
};

// An axis range the data asks for (NaN: let the widget fit the data).
struct AxisRange {
  double lower = NAN, upper = NAN;
  bool valid() const { return !std::isnan(lower) && !std::isnan(upper) && upper > lower; }
};

// One piece of the stream text: a token, or the byte tokens that make one
// character together (first_position..position), coloured by the last one's fate.
struct TokenCell {
  int64_t position = 0;        // the (last) token's stream position
  int64_t first_position = 0;  // the first token's, when several make one character
  std::string text;            // display text, valid UTF-8 (newlines kept)
  Fate fate = Fate::Cached;
  bool prompt = false;  // part of a user turn (or the forced text), not generated
  bool needle = false;  // one of the planted needle's tokens
};

// Attention of the shown layer/head: recent query rows x cache slots.
struct HeatmapData {
  int layer = -1;
  std::vector<int32_t> columns;         // key stream positions, ascending
  std::vector<std::string> labels;      // the word each is part of (word_at), one line each
  std::vector<std::string> pieces;      // each one's own text (its character)
  std::vector<double> column_scores;    // accumulated score at the shown head (NaN: not known)
  std::vector<double> column_mass;      // attention on each column summed over the shown rows (label priority)
  std::vector<int32_t> query_positions; // one per row, oldest first
  std::vector<std::string> query_labels;
  std::vector<double> values;           // rows x columns, row-major; NaN: key not held by that head
  double top = 0;                       // the largest value (the colour scale's top)
  std::string note;                     // why it is empty, when it is
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
  int quantized_tokens = 0;  // of them, held as low-bit codes (a quantized pane)
  int64_t live_bytes = 0;
  double tokens_per_s = 0;
  int64_t generated = 0;
  double perplexity = NAN, agreement = NAN, mean_kl = NAN;
  std::vector<TokenCell> tokens;  // a window of the stream, oldest first
  bool text_follows_end = true;   // the window follows the stream's end (else the user scrolled back)
  HeatmapData heatmap;
  int64_t needle_begin = -1, needle_end = -1;  // the planted needle's positions (-1: none): the views mark them
  SurvivalRaster overview;  // every position of the stream over every step, binned
  // Shown at one KV head: positions before this have that head's steps
  // summarised — the overview still exact, the text and detail its layer's.
  int64_t head_summarised_before = 0;
  SurvivalRaster detail;    // the chosen stretch of positions, since the first of them was fed
  ScoreRank score_rank;
  double sparsity = NAN;  // top-k share at the shown head, at the shown step
  Series sparsity_history;
  std::string stopped;    // why this session stopped early (out of KV memory); empty while it runs
};

struct EvictionAt {
  int layer = 0, kv_head = 0;
  int64_t step = 0;
};

// A clicked token: its score over time and when each policy let it go.
// The most KV heads the inspector draws a score line each for (a line style
// each); a model with more gets their mean, or the chosen head's.
inline constexpr int kInspectorHeadLines = 4;
struct InspectionSnapshot {
  int64_t position = -1;
  int pane = -1;          // whose stream the token is read from: the pane clicked (or H2O's, followed)
  int layers = 0, kv_heads = 0;  // the (layer, KV head) caches each policy has
  int fate_layer = 0;            // the layer each policy's fate_now is at (the shown one)
  bool followed = false;  // nobody clicked: this is H2O's top heavy hitter, picked anew each frame
  std::string text;       // the token at `position` in that pane's stream
  struct PerPolicy {
    std::string policy;
    PolicyConfig config;
    std::string text;  // this policy's token at the position: another than `text` where its answers differ
    int64_t born_step = -1;
    int score_layer = -1;
    // Its accumulated score at score_layer over the steps: a line per KV head
    // that held it (up to kInspectorHeadLines KV heads), the shown head's
    // alone when one is chosen, and past that many KV heads their mean.
    struct ScoreLine {
      int kv_head = -1;  // -1: the mean over the KV heads that held it at each step
      Series series;     // (step, score)
    };
    std::vector<ScoreLine> score_lines;
    std::vector<EvictionAt> evictions;     // every layer and KV head that evicted it
    // Older than the heads' exact steps: a kv_head of -1 is when the layer's last head let it go.
    bool heads_summarised = false;
    Fate fate_now = Fate::Unborn;          // at the shown layer/head
    std::string reason;                    // why, in the policy's terms (fate_reason)
  };
  std::vector<PerPolicy> policies;
};

// bertviz's head view on the recorded attention: one query, the keys it
// attends in each policy's cache, with their weights.
struct HeadViewKey {
  int32_t position = 0;
  std::string text;
  Fate fate = Fate::Cached;
  double weight = 0;  // attention of the shown head (or the mean over heads)
};
struct HeadViewPane {
  std::string policy;
  PolicyConfig config;
  int64_t query_position = -1;  // each policy's own stream: the same step, maybe another position
  std::string query_text;
  std::vector<HeadViewKey> keys;  // the strongest and the sinks, by position
  int keys_attended = 0;          // keys the query saw in this cache (recorded ones)
  int keys_cached = 0;            // keys the cache held at that step (a capture keeps the first and the latest)
  double top_weight = 0;
};
struct HeadViewData {
  int64_t query_step = -1;  // the step whose query is shown
  int layer = -1, head = -1;
  std::vector<HeadViewPane> panes;
};

// bertviz's model view: every layer x head of one policy at the shown step,
// each a small heatmap of the recent captured queries over their keys.
struct ModelViewCell {
  int layer = 0, head = 0;
  int rows = 0, cols = 0;
  std::vector<float> values;  // rows x cols; NaN: key not held
  float top = 0;
};
struct ModelViewData {
  int policy = -1;  // pane index
  std::string policy_title;
  int layers = 0, heads = 0;
  std::vector<ModelViewCell> cells;  // layer-major: cells[layer * heads + head]
};

// The app's needle (docs/STUDIO.md, "The needle"): what each pane still
// holds of it at the shown step, since when, and what each ask answered.
struct NeedleAskPoint {
  int64_t step = -1;             // the ask came after this step
  int64_t distance = 0;          // tokens fed after the needle by then, in this pane's stream
  double survival_question = NAN, survival_answer = NAN;
  double answer_nll = NAN;
  bool exact = false;
  std::string said;              // what greedy decoding said
};
struct NeedlePane {
  int64_t begin = -1, end = -1;  // the needle's positions in this pane's stream (-1: not fed yet)
  int64_t fed_step = -1;         // the step that fed its first tokens
  std::vector<float> held;       // per (layer, KV head), layer-major: the fraction held at the shown step
  double survival = NAN;         // their mean
  int heads_holding = 0;         // (layer, KV head)s holding any of it
  int best_layer = -1, best_layer_heads = 0;  // the layer whose KV heads hold most of it, and how many hold some
  Series curve;                  // x: steps since the needle was fed, y: survival
  int64_t lost_step = -1;        // when the last of it left the last head (-1: still held)
  int64_t lost_after = -1;       // tokens fed after the needle by then
  std::vector<NeedleAskPoint> asks;  // up to the shown step
};
struct NeedleSnapshot {
  bool planted = false;
  std::string text, question, answer;
  int layers = 0, kv_heads = 0;
  std::vector<NeedlePane> panes;  // pane order
};

struct StudioSnapshot {
  int64_t step = -1;         // the step shown
  int64_t latest_step = -1;  // the newest step ingested
  int64_t first_step = 0;
  int64_t steps_ingested = 0;
  bool following = true;     // shows the newest step (else a step chosen on the timeline)
  bool captures_recorded = true;  // the shown step's attention could be read (false past the recording's limit)
  double engine_seconds = 0;
  std::string title, mode, phase;
  int prompt_index = -1;
  int layers = 0, heads = 0, kv_heads = 0;
  int context = 0;           // the model's trained context (0: unknown)
  int shown_layer = 0, shown_head = -1, capture_layer = -1;
  int top_k = 8;
  std::vector<PaneSnapshot> panes;
  // One per policy, in pane order, up to the shown step.
  std::vector<Series> kv_bytes;    // x: tokens in the stream, y: live KV bytes
  std::vector<Series> throughput;  // x: engine seconds, y: decode tokens/s
  std::vector<Series> perplexity;  // x: scored tokens, y: running perplexity (forced mode)
  std::vector<Series> agreement;   // x: scored tokens, y: running top-1 agreement with full
  std::vector<Series> kl;          // x: scored tokens, y: running mean KL(full ‖ policy), nats
  AxisRange throughput_range, perplexity_range;  // robust: early spikes do not set the scale
  InspectionSnapshot inspection;
  HeadViewData head_view;
  ModelViewData model_view;
  NeedleSnapshot needle;
  int64_t history_bytes = 0;  // what the analyzer keeps for the whole history
  // Steps up to the shown one whose other layers' captures the pipeline left
  // out (it could not keep up), and the newest of them (-1: none).
  int64_t thinned_steps = 0, last_thinned_step = -1;
};

}  // namespace h2o
