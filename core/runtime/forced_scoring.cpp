#include "core/runtime/forced_scoring.h"

#include <algorithm>
#include <cmath>

#include "core/runtime/sampler.h"

namespace h2o {

void log_softmax_rows(const float* logits, int rows, int vocab, std::vector<double>& out) {
  out.resize(size_t(rows) * size_t(vocab));
  for (int r = 0; r < rows; ++r)
    log_softmax(std::span<const float>(logits + size_t(r) * vocab, size_t(vocab)),
                std::span<double>(&out[size_t(r) * vocab], size_t(vocab)));
}

void score_forced_rows(std::span<const double> logp, std::span<const double> reference, int vocab,
                       std::span<const int> next, ForcedScores& out) {
  const auto top = [&](const double* row) { return int(std::max_element(row, row + vocab) - row); };
  for (size_t r = 0; r < next.size(); ++r) {
    const double* lp = &logp[r * size_t(vocab)];
    out.nll.push_back(-lp[next[r]]);
    if (reference.empty()) continue;
    const double* ref = &reference[r * size_t(vocab)];
    double kl = 0;
    for (int t = 0; t < vocab; ++t) kl += std::exp(ref[t]) * (ref[t] - lp[t]);
    out.kl.push_back(kl);
    out.agree.push_back(top(lp) == top(ref) ? 1 : 0);
  }
}

std::vector<double> next_token_nlls(std::span<const float> logits, std::span<const int> tokens, int vocab) {
  if (tokens.size() < 2) return {};
  const std::span<const int> next = tokens.subspan(1);
  std::vector<double> logp;
  log_softmax_rows(logits.data(), int(next.size()), vocab, logp);
  ForcedScores scores;
  score_forced_rows(logp, {}, vocab, next, scores);
  return scores.nll;
}

}  // namespace h2o
