#include "core/studio/scoring_meter.h"

#include <algorithm>
#include <cmath>

#include "core/base/process_memory.h"

namespace h2o {

double SessionMeasure::perplexity() const { return scored ? std::exp(nll_sum / double(scored)) : NAN; }

ScoringMeter::ScoringMeter(size_t sessions, std::vector<int64_t> lengths)
    : lengths_(std::move(lengths)),
      running_(sessions),
      points_(sessions, std::vector<std::optional<SessionMeasure>>(lengths_.size())),
      next_(sessions, 0) {}

void ScoringMeter::write(const StepRecord& record) {
  for (const SessionRecord& s : record.sessions) {
    const size_t i = size_t(s.session);
    if (i >= running_.size() || !s.stopped.empty()) continue;  // a stopped session was fed nothing
    SessionMeasure& m = running_[i];
    m.fed += int64_t(s.fed.size());
    m.seconds += s.step_ms / 1000.0;
    m.peak_kv_live_bytes = std::max(m.peak_kv_live_bytes, s.live_bytes);
    m.peak_kv_allocated_bytes = std::max(m.peak_kv_allocated_bytes, s.allocated_bytes);
    for (double nll : s.nll) score(i, nll);
  }
}

// One more prediction scored; a length of N tokens is reached with its N-1st.
void ScoringMeter::score(size_t session, double nll) {
  SessionMeasure& m = running_[session];
  m.nll_sum += nll;
  m.scored += 1;
  size_t& next = next_[session];
  if (next < lengths_.size() && m.scored == lengths_[next] - 1) {
    points_[session][next] = m;
    points_[session][next]->process_peak_rss_bytes = process_peak_rss_bytes();
    ++next;
  }
}

SessionMeasure ScoringMeter::total(size_t session) const {
  SessionMeasure m = running_[session];
  m.process_peak_rss_bytes = process_peak_rss_bytes();
  return m;
}

std::string length_verdict(const std::vector<std::optional<SessionMeasure>>& points) {
  if (points.empty() || !points.front()) return "not measured";
  const double first = points.front()->perplexity();
  for (const auto& p : points) {
    if (!p) return "did not reach every length";
    if (p->perplexity() > kStableFactor * first) return "broken past the trained context";
  }
  return "stable";
}

}  // namespace h2o
