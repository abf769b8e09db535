#pragma once
// The part every needle measurement shares, a grid's cell and the app's ask
// alike: caches that hold a context (with the needle somewhere in it) are
// fed the question, then the answer; what each holds of the needle after the
// question's cut, and how well each predicts the answer.
#include <cstdint>
#include <span>
#include <vector>

#include "core/needle/cache_feed.h"
#include "core/needle/needle_measure.h"

namespace h2o {

// Where a cache's stream holds the needle: positions [begin, end).
struct NeedleSpan {
  int64_t begin = 0, end = 0;
};

struct Answered {
  std::vector<int> held_answer;  // needle positions held per (layer, KV head) after the question's cut
  Recall recall;                 // the answer teacher-forced after the question
  std::vector<int> greedy;       // what greedy decoding says after the question (when asked for)
};

// Feeds `question`, then `answer` but its last token, to every cache (the
// caches move on: give forks where the originals must stay); `needles`: each
// cache's needle. `greedy_tokens` > 0: besides, a fork of each cache at the
// question's end decodes that many tokens greedily (the answer the model would give).
std::vector<Answered> answer_question(CacheFeed& feed, std::span<SessionCache* const> caches,
                                      std::span<const int> question, std::span<const int> answer,
                                      std::span<const NeedleSpan> needles, int greedy_tokens = 0);

// Every layer's state of a cache as it is now (SessionCache::read_layer).
std::vector<LayerState> read_layers(const SessionCache& cache);

}  // namespace h2o
