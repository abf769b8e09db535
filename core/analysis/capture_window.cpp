#include "core/analysis/capture_window.h"

#include <algorithm>

#include "core/recording/recording.h"

namespace h2o {

CaptureWindow::CaptureWindow(const std::vector<PolicyConfig>& policies, size_t whole_entries)
    : policies_(policies.size()), whole_entries_(whole_entries) {
  for (const PolicyConfig& p : policies) sinks_.push_back(p.rule().sinks);
}

void CaptureWindow::hold(size_t policy, int64_t step, const LayerState& state) {
  const int sinks = policy < sinks_.size() ? sinks_[policy] : 0;
  policies_[policy].states[state.layer] = std::make_shared<const HeldState>(hold_state(step, state, sinks, whole_entries_));
}

void CaptureWindow::add(const StepRecord& record) {
  last_step_ = record.step;
  bool first_capture = true;
  for (const SessionRecord& s : record.sessions) {
    if (s.session < 0) continue;
    if (size_t(s.session) >= policies_.size()) policies_.resize(size_t(s.session) + 1);
    PolicyCaptures& p = policies_[size_t(s.session)];
    bool first = true;
    for (const AttentionCapture& a : s.attention) {
      if (a.head != kAllHeads) continue;
      if (first_capture) watched_layer_ = a.layer, first_capture = false;
      auto& kept = p.attention[a.layer];
      kept.push_back({record.step, a});
      // The first capture of a step is the watched layer's: it keeps more rows.
      const size_t cap = (first || a.layer == watched_layer_) ? kWatchedKept : kOtherKept;
      while (kept.size() > cap) kept.pop_front();
      if (first && !a.top_share.empty()) {
        p.share_step = record.step;
        p.top_share = a.top_share;
      }
      first = false;
    }
    for (const LayerState& state : s.layer_states) hold(size_t(s.session), record.step, state);
  }
}

void CaptureWindow::add_state(int session, int64_t step, const LayerState& state) {
  if (session < 0) return;
  if (size_t(session) >= policies_.size()) policies_.resize(size_t(session) + 1);
  const auto& held = policies_[size_t(session)].states[state.layer];
  if (!held || held->step < step) hold(size_t(session), step, state);
}

const CaptureWindow::PolicyCaptures& CaptureWindow::policy(size_t i) const {
  static const PolicyCaptures none;
  return i < policies_.size() ? policies_[i] : none;
}

const std::deque<StepCapture>* CaptureWindow::captures(size_t policy, int layer) const {
  if (policy >= policies_.size()) return nullptr;
  const auto it = policies_[policy].attention.find(layer);
  return it == policies_[policy].attention.end() || it->second.empty() ? nullptr : &it->second;
}

const HeldState* CaptureWindow::state(size_t policy, int layer) const {
  if (policy >= policies_.size()) return nullptr;
  const auto it = policies_[policy].states.find(layer);
  return it == policies_[policy].states.end() ? nullptr : it->second.get();
}

CaptureWindow load_capture_window(const std::string& path, const RecordingIndex& index, int version,
                                  const RecordingHeader& header, int64_t step, size_t whole_entries) {
  const size_t policies = header.policies.size();
  CaptureWindow window(header.policies, whole_entries);
  const int64_t first = std::max(index.first_step, step - CaptureWindow::kSteps + 1);
  if (!index.has(step)) return window;
  RecordingLines lines(path, header, version);
  // States older than the window: the latest line at or before `step` that read one, per session.
  for (size_t s = 0; s < policies && s < 8; ++s) {
    const int64_t at = index.last_state_at(int(s), step);
    if (at < 0 || at >= first) continue;
    const StepRecord r = lines.read(index, at);
    for (const SessionRecord& sr : r.sessions)
      if (sr.session == int(s))
        for (const LayerState& state : sr.layer_states) window.add_state(sr.session, at, state);
  }
  for (int64_t t = first; t <= step; ++t) window.add(lines.read(index, t));
  return window;
}

}  // namespace h2o
