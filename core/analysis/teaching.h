#pragma once
// The teaching views, bertviz-style, on the recorded attention (plain data
// for ui/head_view and ui/model_view): the head view draws lines from one
// query to the keys it attends in each policy's cache; the model view shows
// every layer x head of one policy as a small heatmap.
#include <cstdint>
#include <vector>

#include "core/analysis/capture_window.h"
#include "core/analysis/snapshot.h"
#include "core/analysis/stream_history.h"

namespace h2o {

// The query of step `query_step` (its last row) at `layer`, in every policy
// whose captures hold that step (else its newest capture at or before it);
// the `max_keys` keys of highest weight at `head` (-1: mean over heads) and
// every sink, by position. Fates as of `step`.
HeadViewData head_view(const CaptureWindow& window, const std::vector<PolicyHistory>& histories, int layer, int head,
                       int group, int64_t query_step, int64_t step, int max_keys);

// Every layer x head of policy `policy` from the window: per layer its latest
// `max_rows` captures, over at most `max_cols` keys (the first and the latest).
ModelViewData model_view(const CaptureWindow& window, const PolicyHistory& history, int policy, int layers, int heads,
                         int group, int max_rows, int max_cols);

}  // namespace h2o
