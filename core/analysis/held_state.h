#pragma once
// A layer state as the capture window keeps it. A state is read with every
// position the layer holds — for the full cache at Llama-2-7B, 32 KV heads x
// the whole stream (30 MB after 120,000 steps) — but the views draw only a
// little of it. So each state is summarised once, when it arrives, into what
// they draw, and the rest is let go:
//  - the score-rank curves (every score of a head, and of all heads, sorted),
//    computed before anything is dropped;
//  - per KV head, when it holds more than `whole_entries`: its first entries
//    (the heatmap's first columns, the sinks), its latest kRecordedKeys (the
//    heatmap's latest columns) and, between them, each entry that scores above
//    every one before it (the prefix maxima). Those are all the top heavy
//    hitter can be: the best-scored entry of a stretch from the sinks to where
//    the recent window starts, for any stream length, is one of them.
// For the full cache (it never evicts) every view is then exactly what the
// whole state draws; so it is for a cache that holds at most `whole_entries` a
// head, which is kept whole. An evicting cache past that (a budget of
// thousands a head) may show a heatmap column without its score.
#include <cstdint>
#include <span>
#include <vector>

#include "core/analysis/analytics.h"
#include "core/runtime/capture.h"

namespace h2o {

struct HeldState {
  // Kept whole up to this many entries a KV head (a budget of 1024 and its slack fit).
  static constexpr size_t kWholeEntries = 2048;
  // Points of a score-rank curve (log-spaced ranks).
  static constexpr int kRankPoints = 300;

  int64_t step = -1;                   // when it was read
  LayerState kept;                     // the entries kept, each head in slot order
  std::vector<ScoreRank> rank_by_kv;   // every score of each KV head, ranked
  ScoreRank rank_all;                  // every score of every KV head, ranked

  // The rank curve the views ask for: every KV head's (kv < 0) or one's.
  const ScoreRank& rank(int kv) const;
};

// `state`, read at `step` from a policy with `sinks` sinks, as the window holds
// it. A trimmed head keeps its first max(sinks, kRecordedFirstKeys) entries:
// the heatmap's first columns, and the top heavy hitter's stretch starts after the sinks.
HeldState hold_state(int64_t step, const LayerState& state, int sinks,
                     size_t whole_entries = HeldState::kWholeEntries);

// The indices of `scores` a trimmed head keeps, ascending (see above).
std::vector<size_t> kept_entries(std::span<const float> scores, size_t first_kept, size_t latest_kept);

}  // namespace h2o
