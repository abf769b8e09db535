#pragma once
// The whole history of one policy's stream, kept compact so that an endless
// run can keep it: every position's token, text, birth step and eviction
// steps, and every step's pane numbers. From it the analyzer answers "what did
// this pane show at step S" for any S — the timeline, the whole-stream
// survival rasters and the scrolling text all read it.
//
// Bytes kept (stated in docs/STUDIO.md):
//   per position: 4 token + 4 text end + the text's bytes (~3) + 1 prompt flag + 4 birth step,
//     + 4 once the policy evicts a position from every head at once (StreamingLLM),
//     + 2 x layers x KV heads once it evicts per head (H2O, TOVA: head_evictions.h) for the newest
//     16,384 positions or more, a summary of the older ones (head_summary.h: a few bytes a group of
//     64 positions a head, and the positions a head still holds), + 6 x layers for the layer's
//     merged step (when its last KV head let the position go) and how many heads have; nothing
//     for the full cache;
//   per step: 32 (PaneStep), + 32 in teacher-forced mode (ForcedStep).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/analysis/head_evictions.h"
#include "core/analysis/survival.h"
#include "core/policy/policy.h"

namespace h2o {

class PackedReader;
class CheckpointWriter;

// A pane's numbers after one step.
struct PaneStep {
  int64_t live_bytes = 0;
  float tokens_per_s = 0;
  int32_t cached_tokens = 0;
  int32_t quantized_tokens = 0;  // of them, held as low-bit codes
  int32_t generated = 0;
  uint8_t pending = 0;  // a sampled answer token waits to be fed
  uint8_t stopped = 0;  // the session has stopped (at or before this step)
};
static_assert(sizeof(PaneStep) == 32, "the bytes a step keeps, as stated above");

// Teacher-forced running sums after one step.
struct ForcedStep {
  double nll_sum = 0, kl_sum = 0;
  int32_t scored = 0, compared = 0, agreed = 0;
};

class PolicyHistory {
 public:
  // `exact_head_positions`: how many of the newest positions keep every
  // head's eviction step exactly (head_evictions.h); older ones are summarised.
  PolicyHistory(const PolicyConfig& policy, int layers, int kv_heads,
                int64_t exact_head_positions = HeadEvictions::kExactPositions);
  const PolicyConfig& policy() const { return policy_; }
  const EvictionRule& rule() const { return rule_; }

  // ---- writing, in step order ----
  void feed(int token, std::string_view text, bool prompt, int64_t step);
  void evict_everywhere(int64_t position, int64_t step);
  void evict(int layer, int kv_head, int64_t position, int64_t step);
  void end_step(int64_t step, const PaneStep& numbers, const ForcedStep* forced);
  void set_pending_text(std::string text) { pending_text_ = std::move(text); }
  void set_stopped(int64_t step, std::string why);

  // ---- reading ----
  int64_t length() const { return int64_t(birth_.size()); }
  // Positions fed by the end of `step`.
  int64_t length_at(int64_t step) const;
  int token(int64_t p) const { return tokens_[size_t(p)]; }
  std::string_view piece(int64_t p) const;
  bool prompt(int64_t p) const { return prompt_[size_t(p)] != 0; }
  const std::vector<int32_t>& birth() const { return birth_; }
  // When (layer, KV head) evicted position p: the step, or -1 while held.
  // Where the head's step is summarised (before per_head_exact_from()), the
  // layer's: when its last KV head let p go.
  int32_t evicted_at(int layer, int kv_head, int64_t p) const;
  // The eviction step of every position at one KV head, or (kv_head < 0)
  // when the last KV head of the layer let it go (held while any holds it);
  // a head's summarised steps are its layer's, as in evicted_at().
  std::vector<int32_t> evictions(int layer, int kv_head) const;
  // Positions before this have their per-head steps summarised: 0 while every step is exact.
  int64_t per_head_exact_from() const { return per_head_ ? per_head_->summarised_end() : 0; }
  // Whether evicted_at(layer, kv_head, p) is the head's own step.
  bool head_step_exact(int layer, int kv_head, int64_t p) const;
  // The whole-stream raster (survival.h) of positions [0, end) at one KV
  // head, or at the layer (kv_head < 0), from `evicted` = evictions(layer,
  // kv_head): a head's summarised positions are drawn from its summary, in
  // columns of whole groups, as their exact steps would draw them.
  SurvivalRaster overview(int layer, int kv_head, std::span<const int32_t> evicted, int64_t end, int64_t first_step,
                          int64_t last_step, int max_cols, int max_rows) const;
  // Numbers after `step` (the first step's before it is recorded: zeros).
  const PaneStep& numbers_at(int64_t step) const;
  const ForcedStep* forced_at(int64_t step) const;
  // The answer token sampled at `step` and not yet fed then: its text.
  std::string pending_text_at(int64_t step) const;
  // Why the session stopped, if it had by `step`.
  std::string stopped_at(int64_t step) const;

  // Heap bytes held (capacities), for docs/STUDIO.md's figures and --stats;
  // head_bytes(): of them, the per-head eviction steps' (exact and summarised).
  int64_t bytes() const;
  int64_t head_bytes() const { return per_head_ ? per_head_->bytes() : 0; }

  // ---- checkpoints (analyzer_checkpoint.cpp) ----
  void save(CheckpointWriter& out) const;
  // Into a history that holds nothing yet; what it reads is checked to be one
  // history of `steps` steps from `first_step`. Throws Error.
  void load(PackedReader& in, int64_t first_step, int64_t steps);

 private:
  PolicyConfig policy_;
  EvictionRule rule_;
  int layers_, kv_heads_;
  int64_t exact_head_positions_;
  std::vector<int32_t> tokens_;
  std::string text_bytes_;
  std::vector<uint32_t> text_end_;
  std::vector<uint8_t> prompt_;
  std::vector<int32_t> birth_;
  std::vector<int32_t> evict_all_;                // empty until the first position leaves every head
  std::optional<HeadEvictions> per_head_;         // from the first per-head eviction on
  // Kept with per_head_, so that evictions(layer, -1) is a copy rather than a
  // merge of every head (32 KV heads x the whole stream at Llama-2-7B, each snapshot):
  std::vector<std::vector<int32_t>> evict_layer_;   // [layer][p]: when its last KV head let p go; -1 while one holds it
  std::vector<std::vector<uint16_t>> gone_heads_;   // [layer][p]: how many of its KV heads have let p go
  int64_t first_step_ = -1;
  std::vector<PaneStep> steps_;
  std::vector<ForcedStep> forced_;
  std::string pending_text_;  // of the newest step
  int64_t stopped_step_ = -1;
  std::string stopped_;

  // evict_layer_ and gone_heads_ for positions from `from` on made again from
  // per_head_'s exact steps (a checkpoint read back).
  void merge_layers(int64_t from);
  // Head (layer, kv_head) lets p go at `step` (nothing if it already had); keeps evict_layer_ and gone_heads_.
  void mark_gone(int layer, int kv_head, size_t p, int32_t step);
};

}  // namespace h2o
