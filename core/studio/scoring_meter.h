#pragma once
// What eval reports of each session beyond its scores: how fast it scored,
// the most KV memory it held, and — for the stress test (`eval --lengths`) —
// all of that again at the moment the first N tokens had been scored, for
// each N asked for. One pass over the longest length serves every shorter
// one: teacher forcing over a prefix computes exactly what a run over that
// prefix alone would (the budgets are absolute, nothing looks ahead).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/runtime/run_loop.h"

namespace h2o {

// One session's figures over the tokens seen so far.
struct SessionMeasure {
  int64_t fed = 0;      // tokens fed
  int64_t scored = 0;   // next-token predictions scored
  double seconds = 0;   // wall time of the forward passes that fed them
  double nll_sum = 0;
  int64_t peak_kv_live_bytes = 0, peak_kv_allocated_bytes = 0;
  int64_t process_peak_rss_bytes = 0;  // the whole process's, read when the measure was taken
  double tokens_per_s() const { return seconds > 0 ? double(fed) / seconds : 0; }
  double perplexity() const;
};

class ScoringMeter final : public StepSink {
 public:
  // `lengths`: token counts N (each scores N-1 predictions), increasing; may be empty.
  ScoringMeter(size_t sessions, std::vector<int64_t> lengths);
  void write(const StepRecord& record) override;

  // Everything so far (the process figure is read on each call).
  SessionMeasure total(size_t session) const;
  // The measure when the session had scored the first lengths()[i] tokens;
  // nullopt where it never got there (stopped early, interrupted, text too short).
  const std::optional<SessionMeasure>& at_length(size_t session, size_t i) const { return points_[session][i]; }
  const std::vector<int64_t>& lengths() const { return lengths_; }

 private:
  void score(size_t session, double nll);

  std::vector<int64_t> lengths_;
  std::vector<SessionMeasure> running_;
  std::vector<std::vector<std::optional<SessionMeasure>>> points_;
  std::vector<size_t> next_;  // per session: the first length not reached yet
};

// The stress test's verdict on one session's perplexities at increasing
// lengths: stable while none rises past kStableFactor times the first.
constexpr double kStableFactor = 1.5;
// "stable", "broken past the trained context", or why there is no verdict.
std::string length_verdict(const std::vector<std::optional<SessionMeasure>>& points);

}  // namespace h2o
