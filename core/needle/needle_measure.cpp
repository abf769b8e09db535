#include "core/needle/needle_measure.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/runtime/sampler.h"

namespace h2o {

std::vector<int> held_needle(std::span<const LayerState> states, int32_t begin, int32_t end) {
  std::vector<int> held;
  for (const LayerState& layer : states)
    for (const std::vector<int32_t>& positions : layer.positions) {
      const auto from = std::lower_bound(positions.begin(), positions.end(), begin);
      held.push_back(int(std::lower_bound(from, positions.end(), end) - from));
    }
  return held;
}

double survival_fraction(std::span<const int> held, int64_t needle_tokens) {
  if (held.empty() || needle_tokens <= 0) return 0;
  double sum = 0;
  for (int h : held) sum += double(h) / double(needle_tokens);
  return sum / double(held.size());
}

Recall answer_recall(std::span<const float> logits, std::span<const int> answer, int vocab) {
  if (logits.size() != answer.size() * size_t(vocab))
    throw Error("answer_recall: " + std::to_string(logits.size()) + " logits for " + std::to_string(answer.size()) +
                " answer tokens of a vocabulary of " + std::to_string(vocab) + " (a bug; please report)");
  Recall r;
  std::vector<double> logp(static_cast<size_t>(vocab));
  for (size_t i = 0; i < answer.size(); ++i) {
    const std::span<const float> row = logits.subspan(i * size_t(vocab), size_t(vocab));
    log_softmax(row, logp);
    r.nll -= logp[size_t(answer[i])];
    r.top1.push_back(argmax(row));
    r.exact = r.exact && r.top1.back() == answer[i];
  }
  r.tokens = int(answer.size());
  return r;
}

}  // namespace h2o
