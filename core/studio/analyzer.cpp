#include "core/studio/analyzer.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/studio/capture_schedule.h"

namespace h2o {

namespace {
constexpr size_t kSeriesCap = 4096;        // points per curve before thinning
constexpr size_t kAttentionKept = 64;      // captures kept per policy for the heatmap
constexpr size_t kShareKept = 2048;        // sparsity samples kept per policy
constexpr size_t kScoreSamplesCap = 256;   // score samples per token and KV head before thinning
}  // namespace

std::string display_text(const std::string& piece) {
  std::string out;
  for (char c : piece) {
    if (c == '\n') out += "\u21b5";
    else if (c == '\t') out += "\u2192";
    else if (static_cast<unsigned char>(c) < 0x20) out += "\u00b7";
    else out += c;
  }
  return out;
}

void Analyzer::ThinnedSeries::push(double x, double y) {
  if (++skipped < every) return;
  skipped = 0;
  s.x.push_back(x);
  s.y.push_back(y);
  if (s.x.size() < kSeriesCap) return;
  size_t k = 0;
  for (size_t i = 0; i < s.x.size(); i += 2, ++k) {
    s.x[k] = s.x[i];
    s.y[k] = s.y[i];
  }
  s.x.resize(k);
  s.y.resize(k);
  every *= 2;
}

Analyzer::Analyzer(RecordingHeader header, int64_t evicted_history_kept)
    : header_(std::move(header)), evicted_history_kept_(evicted_history_kept) {
  if (header_.kv_heads < 1 || header_.heads % header_.kv_heads != 0) throw Error("analyzer: bad head counts");
  for (const auto& policy : header_.policies) {
    PolicyState p;
    p.policy = policy;
    p.rule = policy.rule();
    p.evict_step.resize(size_t(header_.layers) * header_.kv_heads);
    policies_.push_back(std::move(p));
  }
}

void Analyzer::ingest(const StepRecord& record) {
  last_step_ = record.step;
  ++steps_;
  engine_seconds_ = record.engine_seconds;
  phase_ = record.phase;
  prompt_index_ = record.prompt_index;
  for (const SessionRecord& s : record.sessions) {
    if (s.session < 0 || s.session >= int(policies_.size())) throw Error("analyzer: session index out of range");
    ingest_session(policies_[size_t(s.session)], record, s);
  }
}

void Analyzer::ingest_session(PolicyState& p, const StepRecord& record, const SessionRecord& s) {
  if (!s.stopped.empty()) {
    // Nothing was fed: the pane keeps its last numbers and says why it stopped.
    p.stopped = s.stopped;
    return;
  }
  // Tokens fed: the first may be the previous answer's last token, not the prompt's.
  for (size_t i = 0; i < s.fed.size(); ++i) {
    const bool answer = record.phase == Phase::Decode || (i == 0 && p.answer_pending);
    p.tokens.push_back(s.fed[i]);
    p.texts.push_back(i < s.fed_text.size() ? s.fed_text[i] : std::string());
    p.prompt.push_back(answer ? 0 : 1);
    p.birth_step.push_back(record.step);
    for (auto& e : p.evict_step) e.push_back(-1);
  }
  if (!s.fed.empty()) p.answer_pending = false;
  if (s.token >= 0 && !s.eos) {
    p.answer_pending = true;
    p.pending_token = s.token;
    p.pending_text = s.text;
  }
  const auto evicted = [&](int layer, int kv_head, int32_t position) {
    if (layer < 0 || layer >= header_.layers || kv_head < 0 || kv_head >= header_.kv_heads) return;
    auto& steps = p.evict_step[size_t(layer) * header_.kv_heads + kv_head];
    if (position >= 0 && size_t(position) < steps.size()) steps[size_t(position)] = record.step;
  };
  for (int32_t position : s.evictions.everywhere)
    for (int l = 0; l < header_.layers; ++l)
      for (int kv = 0; kv < header_.kv_heads; ++kv) evicted(l, kv, position);
  for (const EvictionEvent& e : s.evictions.by_head) evicted(e.layer, e.kv_head, e.position);
  if (s.token >= 0) p.generated += 1;
  p.cached_tokens = s.cached_tokens;
  p.live_bytes = s.live_bytes;
  p.tokens_per_s = s.decode_tokens_per_s;
  for (size_t r = 0; r < s.nll.size(); ++r) {
    p.nll_sum += s.nll[r];
    p.scored += 1;
    if (r < s.agree.size()) {
      p.agreed += s.agree[r];
      p.kl_sum += s.kl[r];
      p.compared += 1;
    }
  }
  // Captures of every query head feed the heatmaps; the first one (the
  // watched layer's) also feeds the sparsity meter.
  bool first = true;
  for (const AttentionCapture& a : s.attention) {
    if (a.head != kAllHeads) continue;
    auto& kept = p.attention[a.layer];
    kept.push_back(a);
    if (kept.size() > kAttentionKept) kept.pop_front();
    if (!first) continue;
    first = false;
    capture_layer_ = a.layer;
    if (a.top_share.empty()) continue;
    p.top_share.emplace_back(record.step, a.top_share);
    if (p.top_share.size() > kShareKept) p.top_share.pop_front();
  }
  // The first state read is the watched layer's: it carries the score history.
  for (size_t i = 0; i < s.layer_states.size(); ++i) {
    const LayerState& state = s.layer_states[i];
    if (i == 0) record_scores(p, record.step, state);
    else p.scores[state.layer] = std::make_shared<const LayerState>(state);
  }

  p.kv_bytes.push(double(p.tokens.size()), double(s.live_bytes));
  // The first answers' rates rest on a handful of tokens and a coarse clock:
  // they would set the curve's scale with a spike nobody can read past.
  constexpr int64_t kThroughputWarmup = 16;
  if (record.phase == Phase::Decode && p.generated >= kThroughputWarmup)
    p.throughput.push(record.engine_seconds, s.decode_tokens_per_s);
  if (!s.nll.empty()) {
    p.perplexity.push(double(p.scored), std::exp(p.nll_sum / double(p.scored)));
    if (p.compared) p.agreement.push(double(p.scored), double(p.agreed) / double(p.compared));
  }
}

const LayerState* Analyzer::scores_of(const PolicyState& p, int layer) const {
  const auto it = p.scores.find(layer);
  return it == p.scores.end() ? nullptr : it->second.get();
}

void Analyzer::record_scores(PolicyState& p, int64_t step, const LayerState& scores) {
  if (scores.layer != p.score_history_layer) {
    // Histories of another layer are not comparable: start over.
    p.score_history.clear();
    p.score_history_layer = scores.layer;
  }
  p.scores[scores.layer] = std::make_shared<const LayerState>(scores);
  const size_t kv_heads = scores.positions.size();
  for (size_t kv = 0; kv < kv_heads; ++kv) {
    for (size_t i = 0; i < scores.positions[kv].size() && i < scores.scores[kv].size(); ++i) {
      auto& per_head = p.score_history[scores.positions[kv][i]];
      if (per_head.size() < kv_heads) per_head.resize(kv_heads);
      auto& samples = per_head[kv];
      samples.push_back({step, scores.scores[kv][i]});
      if (samples.size() >= kScoreSamplesCap) {
        // Keep every other sample but always the newest.
        std::vector<ScoreSample> thinned;
        for (size_t k = 0; k + 1 < samples.size(); k += 2) thinned.push_back(samples[k]);
        thinned.push_back(samples.back());
        samples = std::move(thinned);
      }
    }
  }
  // Forget the old tokens this cache no longer holds (the full cache holds all).
  const int64_t horizon = int64_t(p.tokens.size()) - evicted_history_kept_;
  if (!p.policy.evicts() || horizon <= 0) return;
  std::vector<int32_t> held;
  for (const auto& positions : scores.positions) held.insert(held.end(), positions.begin(), positions.end());
  std::sort(held.begin(), held.end());
  for (auto it = p.score_history.begin(); it != p.score_history.end() && it->first < horizon;)
    it = std::binary_search(held.begin(), held.end(), int32_t(it->first)) ? std::next(it) : p.score_history.erase(it);
}

std::vector<int64_t> Analyzer::shown_evictions(const PolicyState& p, const ViewSelection& view) const {
  const int layer = std::clamp(view.layer, 0, header_.layers - 1);
  const auto at = [&](int kv) -> const std::vector<int64_t>& {
    return p.evict_step[size_t(layer) * header_.kv_heads + kv];
  };
  if (view.head >= 0) return at(std::min(view.head / group(), header_.kv_heads - 1));
  // Mean over heads: a position is gone only when every KV head let it go (at the last of them).
  std::vector<int64_t> out = at(0);
  for (int kv = 1; kv < header_.kv_heads; ++kv) {
    const auto& e = at(kv);
    for (size_t i = 0; i < out.size(); ++i) out[i] = (out[i] < 0 || e[i] < 0) ? -1 : std::max(out[i], e[i]);
  }
  return out;
}

HeatmapData Analyzer::heatmap(const PolicyState& p, const ViewSelection& view) const {
  HeatmapData h;
  h.layer = view.layer;
  // The newest captures of the shown layer, newest first, until enough rows.
  std::vector<const AttentionCapture*> picked;
  int rows = 0;
  const auto of_layer = p.attention.find(view.layer);
  if (of_layer == p.attention.end()) return h;
  for (auto it = of_layer->second.rbegin(); it != of_layer->second.rend() && rows < view.heatmap_rows; ++it) {
    picked.push_back(&*it);
    rows += it->rows;
  }
  if (picked.empty()) return h;
  h.columns = attention_columns(*picked.front(), view.head, group(), view.heatmap_columns, 4);
  std::reverse(picked.begin(), picked.end());
  for (const AttentionCapture* a : picked) {
    append_attention_rows(*a, view.head, group(), h.columns, h.values);
    h.query_positions.insert(h.query_positions.end(), a->query_positions.begin(), a->query_positions.end());
    // A capture with fewer positions than rows would misalign the labels.
    h.query_positions.resize(h.values.size() / std::max<size_t>(h.columns.size(), 1));
  }
  // Drop the oldest rows beyond the asked-for count.
  const int extra = h.rows() - view.heatmap_rows;
  if (extra > 0) {
    h.query_positions.erase(h.query_positions.begin(), h.query_positions.begin() + extra);
    h.values.erase(h.values.begin(), h.values.begin() + long(extra) * long(h.columns.size()));
  }
  h.column_mass.assign(h.columns.size(), 0.0);
  for (int r = 0; r < h.rows(); ++r)
    for (int c = 0; c < h.cols(); ++c)
      if (const double v = h.at(r, c); !std::isnan(v)) h.column_mass[size_t(c)] += v;
  for (int32_t pos : h.columns)
    h.labels.push_back(pos >= 0 && size_t(pos) < p.texts.size() ? display_text(p.texts[size_t(pos)]) : "");
  // Accumulated scores of the columns at the shown head (mean: over KV heads that hold it).
  h.column_scores.assign(h.columns.size(), NAN);
  if (const LayerState* scores = scores_of(p, view.layer)) {
    std::vector<double> sum(h.columns.size(), 0.0);
    std::vector<int> count(h.columns.size(), 0);
    for (size_t kv = 0; kv < scores->positions.size(); ++kv) {
      if (view.head >= 0 && int(kv) != view.head / group()) continue;
      const auto& pos = scores->positions[kv];
      for (size_t i = 0; i < pos.size(); ++i) {
        const auto it = std::lower_bound(h.columns.begin(), h.columns.end(), pos[i]);
        if (it == h.columns.end() || *it != pos[i]) continue;
        sum[size_t(it - h.columns.begin())] += scores->scores[kv][i];
        count[size_t(it - h.columns.begin())] += 1;
      }
    }
    for (size_t c = 0; c < sum.size(); ++c)
      if (count[c]) h.column_scores[c] = sum[c] / count[c];
  }
  return h;
}

PaneSnapshot Analyzer::pane(const PolicyState& p, const ViewSelection& view) const {
  PaneSnapshot out;
  out.policy = p.policy.describe();
  out.config = p.policy;
  out.budget = p.rule.budget;
  out.stream_length = int64_t(p.tokens.size());
  out.cached_tokens = p.cached_tokens;
  out.live_bytes = p.live_bytes;
  out.tokens_per_s = p.tokens_per_s;
  out.generated = p.generated;
  out.stopped = p.stopped;
  if (p.scored) out.perplexity = std::exp(p.nll_sum / double(p.scored));
  if (p.compared) {
    out.agreement = double(p.agreed) / double(p.compared);
    out.mean_kl = p.kl_sum / double(p.compared);
  }

  const std::vector<int64_t> evicted = shown_evictions(p, view);
  const int64_t length = out.stream_length;
  const int64_t first = std::max<int64_t>(0, length - view.max_tokens);
  for (int64_t pos = first; pos < length; ++pos) {
    TokenCell cell;
    cell.position = pos;
    cell.text = p.texts[size_t(pos)];
    cell.fate = fate_of(p.rule, pos, evicted[size_t(pos)] < 0, length);
    cell.prompt = p.prompt[size_t(pos)] != 0;
    out.tokens.push_back(std::move(cell));
  }
  if (p.answer_pending) {
    // The answer's newest token: sampled, not yet in any cache.
    out.tokens.push_back({length, p.pending_text, Fate::Unborn, false});
  }

  out.heatmap = heatmap(p, view);
  out.raster = survival_raster(p.rule, p.birth_step, evicted, last_step_, view.raster_steps, view.raster_positions);
  if (const LayerState* scores = scores_of(p, view.layer)) {
    std::vector<float> values;
    for (size_t kv = 0; kv < scores->scores.size(); ++kv)
      if (view.head < 0 || int(kv) == view.head / group())
        values.insert(values.end(), scores->scores[kv].begin(), scores->scores[kv].end());
    out.score_rank = score_rank(values, view.score_points);
  }
  auto share_at = [&](const std::vector<float>& shares) {
    if (shares.empty()) return double(NAN);
    if (view.head >= 0) return view.head < int(shares.size()) ? double(shares[size_t(view.head)]) : double(NAN);
    double sum = 0;
    for (float s : shares) sum += s;
    return sum / double(shares.size());
  };
  for (const auto& [step, shares] : p.top_share) {
    const double v = share_at(shares);
    if (std::isnan(v)) continue;
    out.sparsity_history.x.push_back(double(step));
    out.sparsity_history.y.push_back(v);
  }
  if (!p.top_share.empty()) out.sparsity = share_at(p.top_share.back().second);
  return out;
}

int64_t Analyzer::top_heavy_hitter(const ViewSelection& view) const {
  for (const PolicyState& p : policies_) {
    const LayerState* scores = scores_of(p, view.layer);
    if (p.rule.score != ScoreKind::Accumulated || !scores) continue;
    const int64_t length = int64_t(p.tokens.size());
    int64_t best = -1;
    float best_score = -1;
    for (size_t kv = 0; kv < scores->positions.size(); ++kv) {
      if (view.head >= 0 && int(kv) != view.head / group()) continue;
      const auto& positions = scores->positions[kv];
      for (size_t i = 0; i < positions.size() && i < scores->scores[kv].size(); ++i) {
        const float score = scores->scores[kv][i];
        if (score > best_score && fate_of(p.rule, positions[i], true, length) == Fate::Heavy) {
          best_score = score;
          best = positions[i];
        }
      }
    }
    return best;
  }
  return -1;
}

InspectionSnapshot Analyzer::inspection(const ViewSelection& requested) const {
  InspectionSnapshot out;
  ViewSelection view = requested;
  if (view.inspect_position < 0) {
    // Nothing clicked yet: follow the most interesting token there is.
    view.inspect_position = top_heavy_hitter(view);
    out.followed = true;
  }
  if (view.inspect_position < 0) return out;
  out.position = view.inspect_position;
  for (const PolicyState& p : policies_) {
    InspectionSnapshot::PerPolicy pp;
    pp.policy = p.policy.describe();
    pp.config = p.policy;
    const int64_t pos = view.inspect_position;
    if (pos < int64_t(p.tokens.size())) {
      if (out.text.empty()) out.text = p.texts[size_t(pos)];
      pp.born_step = p.birth_step[size_t(pos)];
      for (int l = 0; l < header_.layers; ++l)
        for (int kv = 0; kv < header_.kv_heads; ++kv) {
          const int64_t e = p.evict_step[size_t(l) * header_.kv_heads + kv][size_t(pos)];
          if (e >= 0) pp.evictions.push_back({l, kv, e});
        }
      const auto evicted = shown_evictions(p, view);
      pp.fate_now = fate_of(p.rule, pos, evicted[size_t(pos)] < 0, int64_t(p.tokens.size()));
    }
    pp.score_layer = p.score_history_layer;
    if (const auto it = p.score_history.find(pos); it != p.score_history.end()) {
      for (const auto& samples : it->second) {
        Series s;
        for (const ScoreSample& sample : samples) {
          s.x.push_back(double(sample.step));
          s.y.push_back(sample.score);
        }
        pp.score_by_kv_head.push_back(std::move(s));
      }
    }
    out.policies.push_back(std::move(pp));
  }
  return out;
}

StudioSnapshot Analyzer::snapshot(const ViewSelection& requested) const {
  ViewSelection view = requested;
  view.layer = std::clamp(view.layer, 0, header_.layers - 1);
  if (view.head >= header_.heads) view.head = -1;
  StudioSnapshot s;
  s.step = last_step_;
  s.steps_ingested = steps_;
  s.engine_seconds = engine_seconds_;
  s.title = header_.title;
  s.mode = header_.mode;
  s.phase = phase_name(phase_);
  s.prompt_index = prompt_index_;
  s.layers = header_.layers;
  s.heads = header_.heads;
  s.kv_heads = header_.kv_heads;
  s.capture_layer = capture_layer_;
  s.shown_layer = view.layer;
  s.shown_head = view.head;
  s.top_k = kSparsityTopK;
  for (const PolicyState& p : policies_) {
    s.panes.push_back(pane(p, view));
    s.kv_bytes.push_back(p.kv_bytes.s);
    s.throughput.push_back(p.throughput.s);
    s.perplexity.push_back(p.perplexity.s);
    s.agreement.push_back(p.agreement.s);
  }
  s.inspection = inspection(view);
  return s;
}

}  // namespace h2o
