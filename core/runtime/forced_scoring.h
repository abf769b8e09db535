#pragma once
// Teacher-forced scoring of one step's rows: each row's NLL of the token
// that follows it, and, against a reference (the full cache's rows of the
// same step), KL(reference ‖ row) and whether the top-1 predictions agree.
// Every backend scores with these, so the numbers are the same wherever the
// logits were computed.
#include <span>
#include <vector>

namespace h2o {

struct ForcedScores {
  std::vector<double> nll;  // per row with a next token
  std::vector<double> kl;   // per row, when a reference was there
  std::vector<int> agree;   // 1 where the top-1 prediction equals the reference's
};

// Log-softmax (double) of `rows` rows of `vocab` logits into `out`.
void log_softmax_rows(const float* logits, int rows, int vocab, std::vector<double>& out);

// Appends the scores of rows [0, next.size()) of `logp`; `reference` (rows x
// vocab log-probabilities of the same step) may be empty.
void score_forced_rows(std::span<const double> logp, std::span<const double> reference, int vocab,
                       std::span<const int> next, ForcedScores& out);

// -log p(tokens[t + 1]) from row t of `logits` (rows x vocab, a row per
// token fed), for every token but the last: one sequence scored whole.
std::vector<double> next_token_nlls(std::span<const float> logits, std::span<const int> tokens, int vocab);

}  // namespace h2o
