#include "core/analysis/analyzer.h"

#include <algorithm>
#include <tuple>

#include "core/analysis/teaching.h"
#include "core/analysis/text_cells.h"
#include "core/base/error.h"
#include "core/base/stopwatch.h"
#include "core/recording/capture_schedule.h"

namespace h2o {

namespace {
constexpr size_t kSeriesCap = 4096;      // points per curve before thinning
constexpr size_t kShareBins = 1024;      // sparsity bins per policy before merging pairs
constexpr size_t kScoreSamplesCap = 64;  // score samples per token and KV head before thinning
constexpr size_t kTopScoresKept = 32;    // per KV head and read: the heavy hitters keep their histories
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

// ---- bounded series -------------------------------------------------------------

void Analyzer::ThinnedSeries::push(int64_t at, double x, double y) {
  if (++skipped < every) return;
  skipped = 0;
  s.x.push_back(x);
  s.y.push_back(y);
  step.push_back(int32_t(at));
  if (s.x.size() < kSeriesCap) return;
  size_t k = 0;
  for (size_t i = 0; i < s.x.size(); i += 2, ++k) {
    s.x[k] = s.x[i];
    s.y[k] = s.y[i];
    step[k] = step[i];
  }
  s.x.resize(k);
  s.y.resize(k);
  step.resize(k);
  every *= 2;
}

Series Analyzer::ThinnedSeries::until(int64_t last) const {
  const size_t n = size_t(std::upper_bound(step.begin(), step.end(), int32_t(last)) - step.begin());
  if (n == s.x.size()) return s;
  return {std::vector<double>(s.x.begin(), s.x.begin() + long(n)), std::vector<double>(s.y.begin(), s.y.begin() + long(n))};
}

void Analyzer::ShareHistory::add(int64_t step, const std::vector<float>& shares) {
  if (bins.empty() || bins.back().n >= per_bin || bins.back().mean.size() != shares.size()) {
    bins.push_back({step, shares, 1});
  } else {
    Bin& b = bins.back();
    for (size_t h = 0; h < shares.size(); ++h) b.mean[h] += (shares[h] - b.mean[h]) / float(b.n + 1);
    b.n += 1;
    b.step = step;
  }
  if (bins.size() < kShareBins) return;
  // Merge neighbours: twice the steps per bin, half the bins.
  std::vector<Bin> merged;
  for (size_t i = 0; i + 1 < bins.size(); i += 2) {
    Bin b = bins[i];
    const Bin& c = bins[i + 1];
    if (c.mean.size() == b.mean.size())
      for (size_t h = 0; h < b.mean.size(); ++h) b.mean[h] = (b.mean[h] * b.n + c.mean[h] * c.n) / float(b.n + c.n);
    b.n += c.n;
    b.step = c.step;
    merged.push_back(std::move(b));
  }
  if (bins.size() % 2) merged.push_back(bins.back());
  bins = std::move(merged);
  per_bin *= 2;
}

// ---- ingesting ------------------------------------------------------------------

Analyzer::Analyzer(RecordingHeader header, int64_t score_history_horizon, int64_t exact_head_positions,
                   size_t state_whole_entries)
    : header_(std::move(header)),
      horizon_(score_history_horizon),
      state_whole_entries_(state_whole_entries),
      live_(header_.policies, state_whole_entries),
      needle_(header_.policies.size()) {
  if (header_.kv_heads < 1 || header_.heads % header_.kv_heads != 0) throw Error("analyzer: bad head counts");
  for (const auto& policy : header_.policies)
    histories_.emplace_back(policy, header_.layers, header_.kv_heads, exact_head_positions);
  extras_.resize(histories_.size());
}

void Analyzer::ingest(const StepRecord& record) {
  StageTimer timer(ingest_s_);
  if (steps_.empty()) first_step_ = record.step;
  if (record.step != first_step_ + int64_t(steps_.size()))
    throw Error("analyzer: step " + std::to_string(record.step) + " does not follow step " +
                std::to_string(latest_step()));
  steps_.push_back({record.engine_seconds, int32_t(record.prompt_index), record.phase});
  if (record.thinned) thinned_.push_back(int32_t(record.step));
  std::vector<bool> seen(histories_.size(), false);
  for (const SessionRecord& s : record.sessions) {
    if (s.session < 0 || s.session >= int(histories_.size())) throw Error("analyzer: session index out of range");
    seen[size_t(s.session)] = true;
    ingest_session(size_t(s.session), record, s);
  }
  // Sessions that took no part in this step (done with their answer, or stopped) keep their numbers.
  for (size_t i = 0; i < histories_.size(); ++i) {
    if (seen[i]) continue;
    const PolicyExtras& x = extras_[i];
    PaneStep n = histories_[i].numbers_at(record.step - 1);
    n.pending = x.pending;
    n.stopped = x.stopped;
    ForcedStep f{x.nll_sum, x.kl_sum, x.scored, x.compared, x.agreed};
    histories_[i].end_step(record.step, n, header_.mode == "forced" ? &f : nullptr);
  }
  needle_.ingest(record);
  live_.add(record);
}

void Analyzer::ingest_session(size_t index, const StepRecord& record, const SessionRecord& s) {
  PolicyHistory& h = histories_[index];
  PolicyExtras& x = extras_[index];
  const PaneStep previous = h.numbers_at(record.step - 1);
  if (!s.stopped.empty()) {
    // Nothing was fed: the pane keeps its last numbers and says why it stopped.
    x.stopped = true;
    x.pending = false;
    h.set_stopped(record.step, s.stopped);
    PaneStep n = previous;
    n.stopped = 1;
    n.pending = 0;
    ForcedStep f{x.nll_sum, x.kl_sum, x.scored, x.compared, x.agreed};
    h.end_step(record.step, n, header_.mode == "forced" ? &f : nullptr);
    return;
  }
  {
    StageTimer history(history_s_);
    // Tokens fed: the first may be the previous answer's last token, not the prompt's.
    for (size_t i = 0; i < s.fed.size(); ++i) {
      const bool answer = record.phase == Phase::Decode || (i == 0 && x.pending);
      h.feed(s.fed[i], i < s.fed_text.size() ? std::string_view(s.fed_text[i]) : std::string_view(), !answer,
             record.step);
    }
    for (int32_t position : s.evictions.everywhere) h.evict_everywhere(position, record.step);
    for (const EvictionEvent& e : s.evictions.by_head) h.evict(e.layer, e.kv_head, e.position, record.step);
  }
  if (!s.fed.empty()) x.pending = false;
  if (s.token >= 0 && !s.eos) {
    x.pending = true;
    h.set_pending_text(s.text);
  }
  if (s.token >= 0) x.generated += 1;
  for (size_t r = 0; r < s.nll.size(); ++r) {
    x.nll_sum += s.nll[r];
    x.scored += 1;
    if (r < s.agree.size()) {
      x.agreed += s.agree[r];
      x.kl_sum += r < s.kl.size() ? s.kl[r] : 0.0;
      x.compared += 1;
    }
  }
  PaneStep n;
  n.cached_tokens = s.cached_tokens;
  n.quantized_tokens = s.quantized_tokens;
  n.live_bytes = s.live_bytes;
  // Teacher-forced runs never decode: their rate is that of the tokens fed and scored.
  n.tokens_per_s = float(header_.mode == "forced" ? s.prefill_tokens_per_s : s.decode_tokens_per_s);
  n.generated = int32_t(x.generated);
  n.pending = x.pending;
  ForcedStep f{x.nll_sum, x.kl_sum, x.scored, x.compared, x.agreed};
  h.end_step(record.step, n, header_.mode == "forced" ? &f : nullptr);

  // The first capture (the watched layer's) feeds the sparsity history.
  for (const AttentionCapture& a : s.attention) {
    if (a.head != kAllHeads) continue;
    if (!a.top_share.empty()) x.shares.add(record.step, a.top_share);
    break;
  }
  // The first state read is the watched layer's: it carries the score history.
  if (!s.layer_states.empty()) record_scores(index, record.step, s.layer_states.front());

  x.kv_bytes.push(record.step, double(h.length()), double(s.live_bytes));
  // The first answers' rates rest on a handful of tokens and a coarse clock:
  // they would set the curve's scale with a spike nobody can read past.
  constexpr int64_t kThroughputWarmup = 16;
  if (record.phase == Phase::Decode && x.generated >= kThroughputWarmup)
    x.throughput.push(record.step, record.engine_seconds, s.decode_tokens_per_s);
  if (!s.nll.empty()) {
    x.perplexity.push(record.step, double(x.scored), std::exp(x.nll_sum / double(x.scored)));
    if (x.compared) {
      x.agreement.push(record.step, double(x.scored), double(x.agreed) / double(x.compared));
      x.kl.push(record.step, double(x.scored), x.kl_sum / double(x.compared));
    }
  }
}

void Analyzer::record_scores(size_t index, int64_t step, const LayerState& scores) {
  PolicyExtras& x = extras_[index];
  const PolicyHistory& h = histories_[index];
  if (scores.layer != x.score_history_layer) {
    // Histories of another layer are not comparable: start over.
    x.score_history.clear();
    x.score_history_layer = scores.layer;
  }
  const size_t kv_heads = scores.positions.size();
  const int64_t horizon = h.length() - horizon_;
  // Old positions keep a history only while they are among the top scores of a read.
  std::vector<int32_t> top;
  for (size_t kv = 0; kv < kv_heads; ++kv) {
    const auto& pos = scores.positions[kv];
    const auto& val = scores.scores[kv];
    std::vector<size_t> order;
    for (size_t i = 0; i < pos.size() && i < val.size(); ++i)
      if (pos[i] < horizon) order.push_back(i);
    const size_t k = std::min(order.size(), kTopScoresKept);
    std::partial_sort(order.begin(), order.begin() + long(k), order.end(),
                      [&](size_t a, size_t b) { return val[a] > val[b]; });
    for (size_t i = 0; i < k; ++i) top.push_back(pos[order[i]]);
  }
  std::sort(top.begin(), top.end());
  const auto keep = [&](int64_t p) {
    return p >= horizon || p < h.rule().sinks || p == pinned_ || std::binary_search(top.begin(), top.end(), int32_t(p));
  };
  for (size_t kv = 0; kv < kv_heads; ++kv) {
    // A head's positions ascend: each is looked for just after the one before
    // (constant time when it is there or belongs there; a tree search otherwise).
    auto hint = x.score_history.begin();
    for (size_t i = 0; i < scores.positions[kv].size() && i < scores.scores[kv].size(); ++i) {
      const int64_t p = scores.positions[kv][i];
      if (!keep(p)) continue;
      const auto it = hint != x.score_history.end() && hint->first == p ? hint : x.score_history.try_emplace(hint, p);
      hint = std::next(it);
      auto& per_head = it->second;
      if (per_head.size() < kv_heads) per_head.resize(kv_heads);
      auto& samples = per_head[kv];
      samples.push_back({int32_t(step), scores.scores[kv][i]});
      if (samples.size() >= kScoreSamplesCap) {
        // Keep every other sample but always the newest.
        std::vector<ScoreSample> thinned;
        for (size_t k = 0; k + 1 < samples.size(); k += 2) thinned.push_back(samples[k]);
        thinned.push_back(samples.back());
        samples = std::move(thinned);
      }
    }
  }
  for (auto it = x.score_history.begin(); it != x.score_history.end() && it->first < horizon;)
    it = keep(it->first) ? std::next(it) : x.score_history.erase(it);
}

double Analyzer::engine_seconds_at(int64_t step) const {
  if (steps_.empty()) return 0;
  const int64_t i = std::clamp<int64_t>(step - first_step_, 0, int64_t(steps_.size()) - 1);
  return steps_[size_t(i)].engine_seconds;
}

bool Analyzer::thinned_between(int64_t after, int64_t last) const {
  const auto at = [&](int64_t step) {
    return std::upper_bound(thinned_.begin(), thinned_.end(), int32_t(std::clamp<int64_t>(step, -1, INT32_MAX)));
  };
  return last > after && at(last) != at(after);
}

int64_t Analyzer::history_bytes() const {
  int64_t b = int64_t(steps_.capacity() * sizeof(StepInfo) + thinned_.capacity() * 4);
  for (const auto& h : histories_) b += h.bytes();
  return b;
}

int64_t Analyzer::bounded_bytes() const {
  int64_t b = 0;
  for (const PolicyExtras& x : extras_) {
    for (const ThinnedSeries* s : {&x.kv_bytes, &x.throughput, &x.perplexity, &x.agreement, &x.kl})
      b += int64_t(s->s.x.capacity() * 16 + s->step.capacity() * 4);
    for (const auto& bin : x.shares.bins) b += int64_t(sizeof(bin) + bin.mean.capacity() * 4);
    for (const auto& [p, heads] : x.score_history)
      for (const auto& samples : heads) b += int64_t(samples.capacity() * sizeof(ScoreSample)) + 48;
  }
  return b;
}

// ---- snapshots ----------------------------------------------------------------------

HeatmapData Analyzer::heatmap(size_t index, const ViewSelection& view, int64_t step, const CaptureWindow* window) const {
  HeatmapData h;
  h.layer = view.layer;
  const PolicyHistory& history = histories_[index];
  const std::deque<StepCapture>* captures = window ? window->captures(index, view.layer) : nullptr;
  if (!window) {
    h.note = "attention at step " + std::to_string(step) + " was not recorded";
    return h;
  }
  // The newest captures at or before the step, newest first, until enough rows.
  std::vector<const AttentionCapture*> picked;
  int64_t newest = -1;
  int rows = 0;
  if (captures)
    for (auto it = captures->rbegin(); it != captures->rend() && rows < view.heatmap_rows; ++it) {
      if (it->step > step) continue;
      if (picked.empty()) newest = it->step;
      picked.push_back(&it->capture);
      rows += it->capture.rows;
    }
  // A thinned step kept only the watched layer's capture: where one came
  // after the newest capture shown, this layer's newer attention is missing.
  if (thinned_between(newest, step)) {
    h.note = "layer " + std::to_string(view.layer) + "'s attention at step " + std::to_string(step) +
             " was not recorded: the app fell behind the engine and thinned it";
    return h;
  }
  if (!captures) {
    h.note = "no attention of layer " + std::to_string(view.layer) + " recorded yet";
    return h;
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
      if (const double v = h.at(r, c); !std::isnan(v)) {
        h.column_mass[size_t(c)] += v;
        h.top = std::max(h.top, v);
      }
  const auto piece = [&](int64_t q) { return history.piece(q); };
  const int64_t length = history.length();
  for (int32_t pos : h.columns) {
    h.labels.push_back(display_text(word_at(piece, pos, length)));
    h.pieces.push_back(display_text(character_at(piece, pos, length)));
  }
  for (int32_t pos : h.query_positions) h.query_labels.push_back(display_text(character_at(piece, pos, length)));
  // Accumulated scores of the columns at the shown head (mean: over KV heads that hold it).
  h.column_scores.assign(h.columns.size(), NAN);
  if (const HeldState* held = window->state(index, view.layer)) {
    const LayerState* scores = &held->kept;
    std::vector<double> sum(h.columns.size(), 0.0);
    std::vector<int> count(h.columns.size(), 0);
    std::vector<ColumnRun> runs;
    for (size_t kv = 0; kv < scores->positions.size(); ++kv) {
      if (view.head >= 0 && int(kv) != view.head / group()) continue;
      const auto& pos = scores->positions[kv];
      find_columns(std::span(pos).first(std::min(pos.size(), scores->scores[kv].size())), h.columns, runs);
      for (const ColumnRun& run : runs)
        for (size_t j = 0; j < run.length; ++j) {
          sum[run.column + j] += scores->scores[kv][run.index + j];
          count[run.column + j] += 1;
        }
    }
    for (size_t c = 0; c < sum.size(); ++c)
      if (count[c]) h.column_scores[c] = sum[c] / count[c];
  }
  return h;
}

namespace {

// A pane's numbers at `step` (when the stream was `length` long): sizes, rate,
// and in forced mode its quality so far.
void pane_numbers(const PolicyHistory& h, int64_t step, int64_t length, PaneSnapshot& out) {
  const PaneStep& n = h.numbers_at(step);
  out.stream_length = length;
  out.cached_tokens = n.cached_tokens;
  out.quantized_tokens = n.quantized_tokens;
  out.live_bytes = n.live_bytes;
  out.tokens_per_s = n.tokens_per_s;
  out.generated = n.generated;
  out.stopped = h.stopped_at(step);
  if (const ForcedStep* f = h.forced_at(step)) {
    if (f->scored) out.perplexity = std::exp(f->nll_sum / double(f->scored));
    if (f->compared) {
      out.agreement = double(f->agreed) / double(f->compared);
      out.mean_kl = f->kl_sum / double(f->compared);
    }
  }
}

// The text: a window of the stream, whole characters, each coloured by its
// last token's fate in the shown (layer, KV head): `evicted` gives when each
// position left it (-1: never).
void pane_text(const PolicyHistory& h, const ViewSelection& view, int64_t step, int64_t length,
               const std::vector<int32_t>& evicted, PaneSnapshot& out) {
  const auto held = [&](int64_t p) { return evicted[size_t(p)] < 0 || evicted[size_t(p)] > step; };
  int64_t first, end;
  if (view.text_first < 0) {
    end = length;
    first = std::max<int64_t>(0, end - view.max_tokens);
  } else {
    first = std::clamp<int64_t>(view.text_first, 0, std::max<int64_t>(0, length - 1));
    end = std::min<int64_t>(length, first + view.max_tokens);
  }
  out.text_follows_end = view.text_first < 0;  // scrolled back: the window stays put as the stream grows
  const auto piece = [&](int64_t q) { return h.piece(q); };
  for (CharGroup& g : group_characters(piece, first, end)) {
    TokenCell cell;
    cell.position = g.last;
    cell.first_position = g.first;
    cell.text = std::move(g.text);
    cell.fate = fate_of(h.rule(), g.last, held(g.last), length);
    cell.prompt = h.prompt(g.last);
    out.tokens.push_back(std::move(cell));
  }
  const PaneStep& n = h.numbers_at(step);
  if (out.text_follows_end && n.pending && !n.stopped) {
    // The answer's newest token: sampled, not yet in any cache.
    out.tokens.push_back({length, length, utf8_repaired(h.pending_text_at(step)), Fate::Unborn, false});
  }
}

}  // namespace

PaneSnapshot Analyzer::pane(size_t index, const ViewSelection& view, int64_t step, const CaptureWindow* window) const {
  const PolicyHistory& h = histories_[index];
  const PolicyExtras& x = extras_[index];
  PaneSnapshot out;
  out.policy = h.policy().describe();
  out.config = h.policy();
  out.budget = h.rule().budget;
  const int64_t length = h.length_at(step);
  pane_numbers(h, step, length, out);
  const std::vector<int32_t> evicted = h.evictions(view.layer, shown_kv(view));
  pane_text(h, view, step, length, evicted, out);
  std::tie(out.needle_begin, out.needle_end) = needle_.span(index, step);
  for (TokenCell& cell : out.tokens)
    cell.needle = cell.position >= out.needle_begin && cell.first_position < out.needle_end;
  out.heatmap = heatmap(index, view, step, window);
  out.overview = h.overview(view.layer, shown_kv(view), evicted, length, first_step_, step, view.overview_columns,
                            view.overview_rows);
  if (shown_kv(view) >= 0) out.head_summarised_before = h.per_head_exact_from();
  const int64_t detail_first = view.detail_first < 0 ? std::max<int64_t>(0, length - view.detail_positions)
                                                     : std::clamp<int64_t>(view.detail_first, 0, std::max<int64_t>(0, length - 1));
  const int64_t detail_end = std::min<int64_t>(length, detail_first + view.detail_positions);
  const int64_t detail_from = detail_first < length ? int64_t(h.birth()[size_t(detail_first)]) : step;
  out.detail = survival_raster(h.rule(), h.birth(), evicted, detail_first, detail_end, detail_from, step,
                               view.detail_columns, view.detail_rows);
  if (window) {
    // Ranked when the state arrived, from every score it was read with.
    if (const HeldState* held = window->state(index, view.layer)) out.score_rank = held->rank(shown_kv(view));
  }
  auto share_at = [&](const std::vector<float>& shares) {
    if (shares.empty()) return double(NAN);
    if (view.head >= 0) return view.head < int(shares.size()) ? double(shares[size_t(view.head)]) : double(NAN);
    double sum = 0;
    for (float s : shares) sum += s;
    return sum / double(shares.size());
  };
  if (window && window->policy(index).share_step >= 0 && window->policy(index).share_step <= step)
    out.sparsity = share_at(window->policy(index).top_share);
  std::vector<double> sx, sy;
  for (const auto& bin : x.shares.bins) {
    if (bin.step > step) break;
    const double v = share_at(bin.mean);
    if (std::isnan(v)) continue;
    sx.push_back(double(bin.step));
    sy.push_back(v);
  }
  binned_means(sx, sy, view.sparsity_points, out.sparsity_history.x, out.sparsity_history.y);
  return out;
}

std::pair<int64_t, int> Analyzer::top_heavy_hitter(const ViewSelection& view, int64_t step, const CaptureWindow* window) const {
  if (!window) return {-1, -1};
  for (size_t i = 0; i < histories_.size(); ++i) {
    const PolicyHistory& h = histories_[i];
    const HeldState* held = window->state(i, view.layer);
    if (!h.rule().keeps_heavy_hitters() || !held) continue;
    // The held entries include every one that can be the best (held_state.h).
    const LayerState* scores = &held->kept;
    const int64_t length = h.length_at(step);
    int64_t best = -1;
    float best_score = -1;
    for (size_t kv = 0; kv < scores->positions.size(); ++kv) {
      if (view.head >= 0 && int(kv) != view.head / group()) continue;
      const auto& positions = scores->positions[kv];
      for (size_t i2 = 0; i2 < positions.size() && i2 < scores->scores[kv].size(); ++i2) {
        const float score = scores->scores[kv][i2];
        if (score > best_score && fate_of(h.rule(), positions[i2], true, length) == Fate::Heavy) {
          best_score = score;
          best = positions[i2];
        }
      }
    }
    return {best, best < 0 ? -1 : int(i)};
  }
  return {-1, -1};
}

InspectionSnapshot Analyzer::inspection(const ViewSelection& requested, int64_t step, const CaptureWindow* window) const {
  InspectionSnapshot out;
  ViewSelection view = requested;
  if (view.inspect_position < 0) {
    // Nothing clicked yet: follow the most interesting token there is.
    std::tie(view.inspect_position, view.inspect_pane) = top_heavy_hitter(view, step, window);
    out.followed = true;
  }
  if (view.inspect_position < 0 || histories_.empty()) return out;
  const int64_t pos = view.inspect_position;
  out.position = pos;
  out.pane = std::clamp(view.inspect_pane, 0, int(histories_.size()) - 1);
  out.layers = header_.layers;
  out.kv_heads = header_.kv_heads;
  out.fate_layer = std::clamp(view.layer, 0, header_.layers - 1);
  for (size_t i = 0; i < histories_.size(); ++i) {
    const PolicyHistory& h = histories_[i];
    const PolicyExtras& x = extras_[i];
    InspectionSnapshot::PerPolicy pp;
    pp.policy = h.policy().describe();
    pp.config = h.policy();
    const int64_t length = h.length_at(step);
    if (pos < length) {
      pp.text = character_at([&](int64_t q) { return h.piece(q); }, pos, h.length());
      if (int(i) == out.pane) out.text = pp.text;
      pp.born_step = h.birth()[size_t(pos)];
      // A summarised position's heads are listed where kept exactly, its layers where not.
      pp.heads_summarised = pos < h.per_head_exact_from();
      for (int l = 0; l < header_.layers; ++l) {
        bool layer_listed = false;
        for (int kv = 0; kv < header_.kv_heads; ++kv) {
          if (pp.heads_summarised && !h.head_step_exact(l, kv, pos)) {
            const int32_t e = h.evicted_at(l, kv, pos);  // the layer's
            if (!layer_listed && e >= 0 && e <= step) pp.evictions.push_back({l, -1, e});
            layer_listed = true;
            continue;
          }
          const int32_t e = h.evicted_at(l, kv, pos);
          if (e >= 0 && e <= step) pp.evictions.push_back({l, kv, e});
        }
      }
      bool held = false;
      for (int kv = 0; kv < header_.kv_heads; ++kv) {
        if (view.head >= 0 && kv != view.head / group()) continue;
        const int32_t e = h.evicted_at(std::clamp(view.layer, 0, header_.layers - 1), kv, pos);
        held = held || e < 0 || e > step;
      }
      pp.fate_now = fate_of(h.rule(), pos, held, length);
      pp.reason = fate_reason(h.policy(), pp.fate_now);
    }
    pp.score_layer = x.score_history_layer;
    if (const auto it = x.score_history.find(pos); it != x.score_history.end())
      pp.score_lines = score_lines(it->second, step, shown_kv(view));
    out.policies.push_back(std::move(pp));
  }
  return out;
}

std::vector<InspectionSnapshot::PerPolicy::ScoreLine> Analyzer::score_lines(
    const std::vector<std::vector<ScoreSample>>& per_head, int64_t step, int kv_shown) {
  std::vector<InspectionSnapshot::PerPolicy::ScoreLine> lines;
  const auto line_of = [&](int kv) {
    InspectionSnapshot::PerPolicy::ScoreLine line{kv, {}};
    for (const ScoreSample& sample : per_head[size_t(kv)]) {
      if (sample.step > step) break;
      line.series.x.push_back(double(sample.step));
      line.series.y.push_back(sample.score);
    }
    return line;
  };
  if (kv_shown >= 0) {
    if (size_t(kv_shown) < per_head.size()) lines.push_back(line_of(kv_shown));
    return lines;
  }
  if (per_head.size() <= size_t(kInspectorHeadLines)) {
    for (size_t kv = 0; kv < per_head.size(); ++kv) lines.push_back(line_of(int(kv)));
    return lines;
  }
  // The mean at each step over the heads that held it then (a head that let it go has no samples after).
  std::map<int32_t, std::pair<double, int>> at;
  for (const auto& samples : per_head)
    for (const ScoreSample& sample : samples) {
      if (sample.step > step) break;
      auto& [sum, count] = at[sample.step];
      sum += sample.score;
      count += 1;
    }
  InspectionSnapshot::PerPolicy::ScoreLine mean;
  for (const auto& [when, sum_count] : at) {
    mean.series.x.push_back(double(when));
    mean.series.y.push_back(sum_count.first / sum_count.second);
  }
  lines.push_back(std::move(mean));
  return lines;
}

StudioSnapshot Analyzer::snapshot(const ViewSelection& requested, const CaptureWindow* window) const {
  ViewSelection view = requested;
  view.layer = std::clamp(view.layer, 0, header_.layers - 1);
  if (view.head >= header_.heads) view.head = -1;
  StudioSnapshot s;
  s.latest_step = latest_step();
  s.first_step = first_step_;
  s.steps_ingested = steps_ingested();
  const int64_t step = view.step < 0 || view.step >= s.latest_step ? s.latest_step : std::max(first_step_, view.step);
  s.step = step;
  s.following = step == s.latest_step;
  // The captures around the shown step: the live ones for the newest step, else the caller's.
  const CaptureWindow* captures = s.following ? &live_ : (window && window->last_step() == step ? window : nullptr);
  s.captures_recorded = captures != nullptr || steps_.empty();
  if (!steps_.empty()) {
    const StepInfo& info = steps_[size_t(step - first_step_)];
    s.engine_seconds = info.engine_seconds;
    s.phase = phase_name(info.phase);
    s.prompt_index = info.prompt;
  } else {
    s.phase = "ready";
  }
  s.title = header_.title;
  s.mode = header_.mode;
  s.layers = header_.layers;
  s.heads = header_.heads;
  s.kv_heads = header_.kv_heads;
  s.context = header_.context;
  s.capture_layer = captures ? captures->watched_layer() : -1;
  s.shown_layer = view.layer;
  s.shown_head = view.head;
  s.top_k = kSparsityTopK;
  std::vector<std::vector<double>> tx, ty, px, py;
  for (size_t i = 0; i < histories_.size(); ++i) {
    const PolicyExtras& x = extras_[i];
    s.panes.push_back(pane(i, view, step, captures));
    s.kv_bytes.push_back(x.kv_bytes.until(step));
    s.throughput.push_back(x.throughput.until(step));
    s.perplexity.push_back(x.perplexity.until(step));
    s.agreement.push_back(x.agreement.until(step));
    s.kl.push_back(x.kl.until(step));
    tx.push_back(s.throughput.back().x);
    ty.push_back(s.throughput.back().y);
    px.push_back(s.perplexity.back().x);
    py.push_back(s.perplexity.back().y);
  }
  // A running perplexity over its first few tokens, or the first rates, would set the scale alone.
  const YRange t = robust_y_range(tx, ty, 0.05, 4), p = robust_y_range(px, py, 0.05, 16);
  s.throughput_range = {std::min(0.0, t.lower), t.upper};
  s.perplexity_range = {p.lower, p.upper};
  s.inspection = inspection(view, step, captures);
  if (captures) {
    const int64_t query_step = view.query_step < 0 || view.query_step > step ? step : view.query_step;
    s.head_view = head_view(*captures, histories_, view.layer, view.head, group(), query_step, step, view.head_view_keys);
    int policy = view.model_view_policy;
    if (policy < 0 || policy >= int(histories_.size())) {
      policy = 0;
      for (size_t i = 0; i < histories_.size(); ++i)
        if (histories_[i].rule().keeps_heavy_hitters()) {
          policy = int(i);
          break;
        }
    }
    if (!histories_.empty())
      s.model_view = model_view(*captures, histories_[size_t(policy)], policy, header_.layers, header_.heads, group(), 8, 48);
  }
  s.needle = needle_.snapshot(histories_, header_.layers, header_.kv_heads, step);
  s.history_bytes = history_bytes();
  const auto thinned_end = std::upper_bound(thinned_.begin(), thinned_.end(), int32_t(std::min<int64_t>(step, INT32_MAX)));
  s.thinned_steps = thinned_end - thinned_.begin();
  s.last_thinned_step = s.thinned_steps > 0 ? *(thinned_end - 1) : -1;
  return s;
}

}  // namespace h2o
