#pragma once
// What a policy's per-token score sums, as numbers. The CPU backend, the CUDA
// score kernel (kernels/attention_scores.cu includes this), the synthetic
// source and the analyzer read these fields and nothing else, so a policy
// with a new kind of score is still one unit (core/policy/h2o.cpp).
//
// After each step's attention, for every cached token j of a (layer, KV head):
//   score[j] = carry * score[j] + the step's attention to j, summed over the
//              group's query heads and over the step's query rows (its last
//              row alone under last_row_only), heads outer, rows inner.
// A token enters with score 0. Full and StreamingLLM cut by position alone
// (by_score 0) and keep the accumulating default, which the app shows.
#include <cmath>
#include <cstdint>

#include "core/base/host_device.h"

namespace h2o {

struct ScoreRule {
  float carry = 1.0f;          // 1: summed since the token entered (H2O); 0: the step's alone (TOVA); between: decays
  bool last_row_only = false;  // only the step's newest query adds (TOVA)

  // Summed over every query since the token entered: H2O's heavy-hitter score.
  H2O_HD bool accumulates() const { return carry == 1.0f && !last_row_only; }
  // The part of `previous` a step keeps before its attention adds: all of it,
  // none (so a step's score never depends on an older one), or carry of it.
  H2O_HD float carried(float previous) const {
    return carry == 1.0f ? previous : carry > 0.0f ? carry * previous : 0.0f;
  }
  // Whether query row `row` of a step of `rows` adds to the scores.
  H2O_HD bool row_adds(int row, int rows) const { return !last_row_only || row == rows - 1; }
  // The score of a token `age` steps old (1: it entered this step) whose
  // attention is 1 every step: age for an accumulating score, 1 for the
  // step's alone, the geometric sum between. For sources that model a
  // token's attention as steady (the synthetic steps).
  float steady_weight(int64_t age) const {
    if (carry == 1.0f) return float(age);
    if (carry <= 0.0f) return 1.0f;
    return float((1.0 - std::pow(double(carry), double(age))) / (1.0 - double(carry)));
  }
  // Written out: the kernels compile as C++17, which has no defaulted ==.
  bool operator==(const ScoreRule& o) const { return carry == o.carry && last_row_only == o.last_row_only; }
};

// The two scores the registered kinds cut by.
inline constexpr ScoreRule kAccumulatedScore{};        // H2O (full, StreamingLLM: shown)
inline constexpr ScoreRule kCurrentScore{0.0f, true};  // TOVA: nothing carries, the last row alone

}  // namespace h2o
