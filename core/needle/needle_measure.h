#pragma once
// What a needle test measures of one cache (SEMANTICS.md, "Needles"): how
// many needle positions each (layer, KV head) holds, and the answer's recall
// from the rows that predict it.
#include <cstdint>
#include <span>
#include <vector>

#include "core/runtime/capture.h"

namespace h2o {

// Needle positions [begin, end) held per (layer, KV head), indexed
// layer * kv_heads + kv_head, from every layer's state (positions ascending).
std::vector<int> held_needle(std::span<const LayerState> states, int32_t begin, int32_t end);

// Their mean fraction over every (layer, KV head): survival_question / _answer.
double survival_fraction(std::span<const int> held, int64_t needle_tokens);

struct Recall {
  double nll = 0;          // sum over the answer's tokens of -ln p(token | everything before it), nats
  int tokens = 0;
  bool exact = true;       // every answer token the top-1 prediction of the row before it
  std::vector<int> top1;   // each row's top-1 token (ties to the lowest id)
};

// `logits`: rows x vocab, row i the prediction of answer[i].
Recall answer_recall(std::span<const float> logits, std::span<const int> answer, int vocab);

}  // namespace h2o
