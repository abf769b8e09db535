#include "core/analysis/held_state.h"

#include <algorithm>
#include <cmath>

#include "core/recording/capture_schedule.h"

namespace h2o {

const ScoreRank& HeldState::rank(int kv) const {
  return kv >= 0 && size_t(kv) < rank_by_kv.size() ? rank_by_kv[size_t(kv)] : rank_all;
}

std::vector<size_t> kept_entries(std::span<const float> scores, size_t first_kept, size_t latest_kept) {
  const size_t n = scores.size();
  std::vector<size_t> kept;
  if (n <= first_kept + latest_kept) {
    kept.resize(n);
    for (size_t i = 0; i < n; ++i) kept[i] = i;
    return kept;
  }
  for (size_t i = 0; i < first_kept; ++i) kept.push_back(i);
  // Strictly above every score before it (from first_kept on): the first of equal scores stays,
  // as the top heavy hitter's search keeps the first of equals.
  float best = -INFINITY;
  const size_t latest_from = n - latest_kept;
  for (size_t i = first_kept; i < latest_from; ++i)
    if (scores[i] > best) {
      best = scores[i];
      kept.push_back(i);
    }
  for (size_t i = latest_from; i < n; ++i) kept.push_back(i);
  return kept;
}

HeldState hold_state(int64_t step, const LayerState& state, int sinks, size_t whole_entries) {
  const size_t first_kept = size_t(std::max(sinks, kRecordedFirstKeys));
  HeldState held;
  held.step = step;
  held.kept.layer = state.layer;
  std::vector<float> all;
  for (const auto& scores : state.scores) {
    held.rank_by_kv.push_back(score_rank(scores, HeldState::kRankPoints));
    all.insert(all.end(), scores.begin(), scores.end());
  }
  held.rank_all = score_rank(all, HeldState::kRankPoints);

  const size_t kv_heads = std::max(state.positions.size(), state.scores.size());
  held.kept.positions.resize(state.positions.size());
  held.kept.scores.resize(state.scores.size());
  for (size_t kv = 0; kv < kv_heads; ++kv) {
    const bool both = kv < state.positions.size() && kv < state.scores.size();
    if (!both || std::max(state.positions[kv].size(), state.scores[kv].size()) <= whole_entries) {
      if (kv < state.positions.size()) held.kept.positions[kv] = state.positions[kv];
      if (kv < state.scores.size()) held.kept.scores[kv] = state.scores[kv];
      continue;
    }
    // A head's positions and scores pair up to the shorter of the two (the views read no further).
    const auto& positions = state.positions[kv];
    const auto scores = std::span(state.scores[kv]).first(std::min(state.scores[kv].size(), positions.size()));
    for (size_t i : kept_entries(scores, first_kept, size_t(kRecordedKeys))) {
      held.kept.positions[kv].push_back(positions[i]);
      held.kept.scores[kv].push_back(scores[i]);
    }
  }
  return held;
}

}  // namespace h2o
