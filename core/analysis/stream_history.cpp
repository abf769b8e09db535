#include "core/analysis/stream_history.h"

#include <algorithm>

#include "core/base/error.h"

namespace h2o {

PolicyHistory::PolicyHistory(const PolicyConfig& policy, int layers, int kv_heads, int64_t exact_head_positions)
    : policy_(policy),
      rule_(policy.rule()),
      layers_(layers),
      kv_heads_(kv_heads),
      exact_head_positions_(exact_head_positions) {}

void PolicyHistory::feed(int token, std::string_view text, bool prompt, int64_t step) {
  tokens_.push_back(token);
  text_bytes_.append(text);
  text_end_.push_back(uint32_t(text_bytes_.size()));
  prompt_.push_back(prompt ? 1 : 0);
  birth_.push_back(int32_t(step));
  if (!evict_all_.empty()) evict_all_.push_back(-1);
  if (per_head_) {
    per_head_->add_position();
    per_head_->summarise_old(rule_, birth_);
  }
  for (auto& e : evict_layer_) e.push_back(-1);
  for (auto& g : gone_heads_) g.push_back(0);
}

void PolicyHistory::mark_gone(int layer, int kv_head, size_t p, int32_t step) {
  if (!per_head_->let_go(layer, kv_head, int64_t(p), birth_[p], step)) return;
  // Steps come in order, so the last head to let p go gives the layer's step.
  if (++gone_heads_[size_t(layer)][p] == kv_heads_) evict_layer_[size_t(layer)][p] = step;
}

void PolicyHistory::evict_everywhere(int64_t position, int64_t step) {
  if (position < 0 || position >= length()) return;
  if (per_head_) {
    // Per-head steps are kept: a head that let it go earlier keeps its step.
    for (int layer = 0; layer < layers_; ++layer)
      for (int kv = 0; kv < kv_heads_; ++kv) mark_gone(layer, kv, size_t(position), int32_t(step));
    return;
  }
  if (evict_all_.empty()) evict_all_.assign(size_t(length()), -1);
  evict_all_[size_t(position)] = int32_t(step);
}

void PolicyHistory::evict(int layer, int kv_head, int64_t position, int64_t step) {
  if (layer < 0 || layer >= layers_ || kv_head < 0 || kv_head >= kv_heads_ || position < 0 || position >= length())
    return;
  if (!per_head_) {
    // From now on every head keeps its own steps, starting from the shared ones.
    const std::vector<int32_t> shared = evict_all_.empty() ? std::vector<int32_t>(size_t(length()), -1) : evict_all_;
    per_head_.emplace(layers_, kv_heads_, exact_head_positions_);
    for (size_t p = 0; p < shared.size(); ++p) per_head_->add_position();
    evict_layer_.assign(size_t(layers_), std::vector<int32_t>(shared.size(), -1));
    gone_heads_.assign(size_t(layers_), std::vector<uint16_t>(shared.size(), 0));
    evict_all_.clear();
    evict_all_.shrink_to_fit();
    for (size_t p = 0; p < shared.size(); ++p)
      if (shared[p] >= 0)
        for (int l = 0; l < layers_; ++l)
          for (int kv = 0; kv < kv_heads_; ++kv) mark_gone(l, kv, p, shared[p]);
    per_head_->summarise_old(rule_, birth_);
  }
  mark_gone(layer, kv_head, size_t(position), int32_t(step));
}

void PolicyHistory::end_step(int64_t step, const PaneStep& numbers, const ForcedStep* forced) {
  if (first_step_ < 0) first_step_ = step;
  if (step != first_step_ + int64_t(steps_.size())) throw Error("analyzer: step " + std::to_string(step) + " out of order");
  steps_.push_back(numbers);
  if (forced) forced_.push_back(*forced);
}

void PolicyHistory::set_stopped(int64_t step, std::string why) {
  if (stopped_step_ >= 0) return;
  stopped_step_ = step;
  stopped_ = std::move(why);
}

int64_t PolicyHistory::length_at(int64_t step) const {
  return int64_t(std::upper_bound(birth_.begin(), birth_.end(), int32_t(std::min<int64_t>(step, INT32_MAX))) -
                 birth_.begin());
}

std::string_view PolicyHistory::piece(int64_t p) const {
  const uint32_t begin = p > 0 ? text_end_[size_t(p - 1)] : 0;
  return std::string_view(text_bytes_).substr(begin, text_end_[size_t(p)] - begin);
}

int32_t PolicyHistory::evicted_at(int layer, int kv_head, int64_t p) const {
  if (per_head_) {
    const int32_t step = per_head_->at(layer, kv_head, p, birth_[size_t(p)]);
    return step == HeadEvictions::kSummarised ? evict_layer_[size_t(layer)][size_t(p)] : step;
  }
  return evict_all_.empty() ? -1 : evict_all_[size_t(p)];
}

bool PolicyHistory::head_step_exact(int layer, int kv_head, int64_t p) const {
  return !per_head_ || per_head_->at(layer, kv_head, p, birth_[size_t(p)]) != HeadEvictions::kSummarised;
}

std::vector<int32_t> PolicyHistory::evictions(int layer, int kv_head) const {
  layer = std::clamp(layer, 0, layers_ - 1);
  if (!per_head_) return evict_all_.empty() ? std::vector<int32_t>(size_t(length()), -1) : evict_all_;
  if (kv_head >= 0)
    return per_head_->column(layer, std::min(kv_head, kv_heads_ - 1), birth_, evict_layer_[size_t(layer)]);
  return evict_layer_[size_t(layer)];
}

SurvivalRaster PolicyHistory::overview(int layer, int kv_head, std::span<const int32_t> evicted, int64_t end,
                                       int64_t first_step, int64_t last_step, int max_cols, int max_rows) const {
  const bool summarised = per_head_ && kv_head >= 0 && per_head_->summarised_end() > 0;
  const int64_t head = int64_t(std::clamp(layer, 0, layers_ - 1)) * kv_heads_ + std::min(kv_head, kv_heads_ - 1);
  return survival_raster(rule_, birth_, evicted, 0, end, first_step, last_step, max_cols, max_rows,
                         summarised ? &per_head_->summary() : nullptr, head);
}

const PaneStep& PolicyHistory::numbers_at(int64_t step) const {
  static const PaneStep none;
  if (steps_.empty() || step < first_step_) return none;
  return steps_[size_t(std::min<int64_t>(step - first_step_, int64_t(steps_.size()) - 1))];
}

const ForcedStep* PolicyHistory::forced_at(int64_t step) const {
  if (forced_.empty() || step < first_step_) return nullptr;
  return &forced_[size_t(std::min<int64_t>(step - first_step_, int64_t(forced_.size()) - 1))];
}

std::string PolicyHistory::pending_text_at(int64_t step) const {
  if (!numbers_at(step).pending) return {};
  const int64_t at = length_at(step);
  // Fed later: it is the first position fed after `step`; else still waiting.
  return at < length() ? std::string(piece(at)) : pending_text_;
}

std::string PolicyHistory::stopped_at(int64_t step) const {
  return stopped_step_ >= 0 && step >= stopped_step_ ? stopped_ : std::string();
}

int64_t PolicyHistory::bytes() const {
  int64_t b = int64_t(tokens_.capacity() * 4 + text_bytes_.capacity() + text_end_.capacity() * 4 +
                      prompt_.capacity() + birth_.capacity() * 4 + evict_all_.capacity() * 4 +
                      steps_.capacity() * sizeof(PaneStep) + forced_.capacity() * sizeof(ForcedStep));
  if (per_head_) b += per_head_->bytes();
  for (const auto& e : evict_layer_) b += int64_t(e.capacity() * 4);
  for (const auto& g : gone_heads_) b += int64_t(g.capacity() * 2);
  return b;
}

}  // namespace h2o
