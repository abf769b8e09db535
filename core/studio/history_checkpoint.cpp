// The analyzer's checkpoint: its whole history (stream_history.h, the per-head
// table of head_evictions.h) and the rest it keeps (curves, score histories,
// the steps' times), written as plain arrays into one zstd frame, and read
// back with every size and order checked, so that a damaged checkpoint is one
// Error and never a crash in a snapshot later. The window of newest captures
// is not kept: the steps that follow a checkpoint in a recording refill it.
#include <algorithm>
#include <cstring>
#include <utility>

#include "core/base/packed_bytes.h"
#include "core/base/error.h"
#include "core/studio/analyzer.h"
#include "core/studio/checkpoint_stream.h"
#include "core/studio/head_evictions.h"
#include "core/studio/stream_history.h"

namespace h2o {

namespace {

constexpr uint64_t kCheckpointFormat = 1;
// Steps and births stay far enough below 2^31 that a birth plus an age cannot overflow.
constexpr int64_t kMaxStep = int64_t(1) << 30;

bool ascending(const auto& v) { return std::is_sorted(v.begin(), v.end()); }
// Eviction steps: -1 (held) or a step.
bool steps_or_held(const std::vector<int32_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int32_t s) { return s >= -1 && s < kMaxStep; });
}

void require(bool ok, const char* what) {
  if (!ok) throw Error(std::string("checkpoint: ") + what);
}

}  // namespace

// ---- the per-head table -------------------------------------------------------------

void HeadEvictions::save(CheckpointWriter& out, std::span<const int32_t> birth) const {
  PackedWriter& w = out.bytes();
  w.varint(uint64_t(length_));
  for (int64_t head = 0; head < heads_; ++head) {
    const int layer = int(head / kv_heads_), kv = int(head % kv_heads_);
    int64_t before = -1;  // held
    for (const int32_t step : column(layer, kv, birth)) {
      w.signed_varint(int64_t(step) - before);
      before = step;
    }
    out.spill();
  }
}

HeadEvictions HeadEvictions::load(PackedReader& in, int layers, int kv_heads, std::span<const int32_t> birth) {
  HeadEvictions table(layers, kv_heads);
  const uint64_t length = in.varint();
  // Each position takes a byte a head at least: checked before anything is allocated.
  require(length == birth.size() && table.heads_ > 0 && length <= in.left() / uint64_t(table.heads_),
          "a per-head table of another length than its positions");
  for (uint64_t p = 0; p < length; ++p) table.add_position();
  for (int64_t head = 0; head < table.heads_; ++head) {
    int64_t step = -1;
    for (int64_t p = 0; p < int64_t(length); ++p) {
      step += in.within(-kMaxStep, kMaxStep, "an eviction step");
      require(step >= -1 && step < kMaxStep, "an eviction step out of range");
      if (step == -1) continue;  // held
      require(step >= birth[size_t(p)], "an eviction before its position's birth");
      table.let_go(int(head / kv_heads), int(head % kv_heads), p, birth[size_t(p)], int32_t(step));
    }
  }
  return table;
}

// ---- one policy's history ---------------------------------------------------------------

void PolicyHistory::save(CheckpointWriter& out) const {
  PackedWriter& w = out.bytes();
  w.array(tokens_);
  w.text(text_bytes_);
  w.array(text_end_);
  w.array(prompt_);
  w.array(birth_);
  w.array(evict_all_);
  out.spill();
  w.byte(per_head_ ? 1 : 0);
  // A layer's merged steps and counts follow from the heads' steps: not written.
  if (per_head_) per_head_->save(out, birth_);
  w.signed_varint(first_step_);
  w.array(steps_);
  w.array(forced_);
  w.text(pending_text_);
  w.signed_varint(stopped_step_);
  w.text(stopped_);
  out.spill();
}

void PolicyHistory::load(PackedReader& in, int64_t first_step, int64_t steps) {
  require(length() == 0 && steps_.empty(), "loaded into a history that holds steps");
  tokens_ = in.array<int32_t>();
  text_bytes_ = in.text();
  text_end_ = in.array<uint32_t>();
  prompt_ = in.array<uint8_t>();
  birth_ = in.array<int32_t>();
  evict_all_ = in.array<int32_t>();
  const size_t n = tokens_.size();
  require(text_end_.size() == n && prompt_.size() == n && birth_.size() == n, "positions of unequal counts");
  require(ascending(text_end_) && (n ? text_end_.back() == text_bytes_.size() : text_bytes_.empty()), "text ends out of order");
  require(ascending(birth_) && (!n || (birth_.front() >= 0 && birth_.back() < first_step + steps)), "births out of order");
  require(evict_all_.empty() || evict_all_.size() == n, "evictions of another length");
  require(steps_or_held(evict_all_), "an eviction step out of range");
  if (in.byte()) {
    per_head_.emplace(HeadEvictions::load(in, layers_, kv_heads_, birth_));
    require(evict_all_.empty(), "evictions both everywhere and per head");
    merge_layers();
  }
  first_step_ = in.within(-1, kMaxStep, "the first step");
  steps_ = in.array<PaneStep>();
  forced_ = in.array<ForcedStep>();
  require(first_step_ == first_step && int64_t(steps_.size()) == steps, "steps that are not the analyzer's");
  require(forced_.empty() || forced_.size() == steps_.size(), "forced steps of another count");
  pending_text_ = in.text();
  stopped_step_ = in.within(-1, kMaxStep, "the stopping step");
  stopped_ = in.text();
}

void PolicyHistory::merge_layers() {
  const size_t n = size_t(length());
  evict_layer_.assign(size_t(layers_), std::vector<int32_t>(n, -1));
  gone_heads_.assign(size_t(layers_), std::vector<uint16_t>(n, 0));
  for (int layer = 0; layer < layers_; ++layer)
    for (int kv = 0; kv < kv_heads_; ++kv) {
      const std::vector<int32_t> steps = per_head_->column(layer, kv, birth_);
      auto& last = evict_layer_[size_t(layer)];
      auto& gone = gone_heads_[size_t(layer)];
      for (size_t p = 0; p < n; ++p) {
        if (steps[p] < 0) continue;
        gone[p] += 1;
        last[p] = std::max(last[p], steps[p]);
      }
    }
  // A layer's step is its last head's: only where every head has let go.
  for (int layer = 0; layer < layers_; ++layer)
    for (size_t p = 0; p < n; ++p)
      if (gone_heads_[size_t(layer)][p] != kv_heads_) evict_layer_[size_t(layer)][p] = -1;
}

// ---- the analyzer's own ------------------------------------------------------------------

void Analyzer::ThinnedSeries::save(PackedWriter& w) const {
  w.array(s.x);
  w.array(s.y);
  w.array(step);
  w.signed_varint(every);
  w.signed_varint(skipped);
}

void Analyzer::ThinnedSeries::load(PackedReader& r) {
  s.x = r.array<double>();
  s.y = r.array<double>();
  step = r.array<int32_t>();
  every = int(r.within(1, INT32_MAX, "a curve's thinning"));
  skipped = int(r.within(0, every - 1, "a curve's skipped points"));
  require(s.y.size() == s.x.size() && step.size() == s.x.size() && ascending(step), "a curve out of shape");
}

void Analyzer::ShareHistory::save(PackedWriter& w) const {
  w.signed_varint(per_bin);
  w.varint(bins.size());
  for (const Bin& b : bins) {
    w.signed_varint(b.step);
    w.signed_varint(b.n);
    w.array(b.mean);
  }
}

void Analyzer::ShareHistory::load(PackedReader& r) {
  per_bin = int(r.within(1, INT32_MAX, "shares per bin"));
  for (size_t n = r.count(3); n > 0; --n) {
    Bin b;
    b.step = r.within(0, kMaxStep, "a share bin's step");
    b.n = int(r.within(1, INT32_MAX, "a share bin's count"));
    b.mean = r.array<float>();
    bins.push_back(std::move(b));
  }
}

void Analyzer::PolicyExtras::save(PackedWriter& w) const {
  w.text(pending_text);
  w.signed_varint(generated);
  w.f64(nll_sum);
  w.f64(kl_sum);
  for (int32_t v : {scored, agreed, compared, score_history_layer}) w.signed_varint(v);
  w.byte(uint8_t(pending) | uint8_t(stopped) << 1);
  w.varint(score_history.size());
  for (const auto& [position, heads] : score_history) {
    w.signed_varint(position);
    w.varint(heads.size());
    for (const auto& samples : heads) {
      // Steps ascend: written as differences (a byte or two) before the scores.
      w.varint(samples.size());
      int32_t before = 0;
      for (const ScoreSample& x : samples) w.signed_varint(int64_t(x.step) - std::exchange(before, x.step));
      for (const ScoreSample& x : samples) w.f32(x.score);
    }
  }
  for (const ThinnedSeries* s : {&kv_bytes, &throughput, &perplexity, &agreement, &kl}) s->save(w);
  shares.save(w);
}

void Analyzer::PolicyExtras::load(PackedReader& r, const RecordingHeader& header) {
  pending_text = r.text();
  generated = r.within(0, INT64_MAX, "answer tokens");
  nll_sum = r.f64();
  kl_sum = r.f64();
  scored = r.whole("scored tokens");
  agreed = r.whole("agreeing tokens");
  compared = r.whole("compared tokens");
  score_history_layer = int(r.within(-1, header.layers - 1, "the score history's layer"));
  const uint8_t flags = r.byte();
  pending = flags & 1;
  stopped = flags & 2;
  int64_t before = -1;
  for (size_t n = r.count(2); n > 0; --n) {
    const int64_t position = r.within(before + 1, kMaxStep, "a scored position");
    const size_t heads = r.count();
    require(heads <= size_t(header.kv_heads), "scores of more KV heads than the model has");
    auto& per_head = score_history[position];
    for (size_t kv = 0; kv < heads; ++kv) {
      std::vector<ScoreSample> samples(r.count(5));
      int64_t step = 0;
      for (ScoreSample& x : samples) {
        step += r.within(0, kMaxStep, "a score's step");
        require(step < kMaxStep, "a score's step out of range");
        x.step = int32_t(step);
      }
      for (ScoreSample& x : samples) x.score = r.f32();
      per_head.push_back(std::move(samples));
    }
    before = position;
  }
  for (ThinnedSeries* s : {&kv_bytes, &throughput, &perplexity, &agreement, &kl}) s->load(r);
  shares.load(r);
}

int64_t Analyzer::save_checkpoint(std::ostream& out) const {
  CheckpointWriter checkpoint(out);
  PackedWriter& w = checkpoint.bytes();
  w.varint(kCheckpointFormat);
  for (int v : {header_.layers, header_.heads, header_.kv_heads, int(histories_.size())}) w.varint(uint64_t(v));
  w.signed_varint(first_step_);
  std::vector<double> seconds;
  std::vector<int32_t> prompts;
  std::vector<uint8_t> phases;
  for (const StepInfo& s : steps_) {
    seconds.push_back(s.engine_seconds);
    prompts.push_back(s.prompt);
    phases.push_back(uint8_t(s.phase));
  }
  w.array(seconds);
  w.array(prompts);
  w.array(phases);
  w.array(thinned_);
  for (size_t i = 0; i < histories_.size(); ++i) {
    histories_[i].save(checkpoint);
    extras_[i].save(w);
  }
  return checkpoint.finish();
}

void Analyzer::restore_checkpoint(std::string_view frame, size_t max_bytes) {
  require(steps_.empty(), "restored into an analyzer that has steps");
  const std::string raw = unpack_checkpoint(frame, max_bytes);
  PackedReader r(raw, "checkpoint");
  require(r.varint() == kCheckpointFormat, "of a format this build does not read");
  for (int v : {header_.layers, header_.heads, header_.kv_heads, int(histories_.size())})
    require(r.varint() == uint64_t(v), "of another model's shape or other panes than its recording's");
  const int64_t first_step = r.within(0, kMaxStep, "the first step");
  const std::vector<double> seconds = r.array<double>();
  const std::vector<int32_t> prompts = r.array<int32_t>();
  const std::vector<uint8_t> phases = r.array<uint8_t>();
  std::vector<int32_t> thinned = r.array<int32_t>();
  const int64_t steps = int64_t(seconds.size());
  require(steps > 0 && first_step + steps <= kMaxStep, "of no steps");
  require(prompts.size() == seconds.size() && phases.size() == seconds.size(), "steps of unequal counts");
  require(std::all_of(phases.begin(), phases.end(), [](uint8_t p) { return p <= uint8_t(Phase::Done); }), "a step's phase unknown");
  require(ascending(thinned) && (thinned.empty() || (thinned.front() >= first_step && thinned.back() < first_step + steps)),
          "thinned steps out of order");
  // Built apart and swapped in whole: a checkpoint that fails half way leaves nothing half restored.
  std::vector<PolicyHistory> histories;
  std::vector<PolicyExtras> extras(histories_.size());
  for (size_t i = 0; i < histories_.size(); ++i) {
    histories.emplace_back(header_.policies[i], header_.layers, header_.kv_heads);
    histories.back().load(r, first_step, steps);
    extras[i].load(r, header_);
  }
  require(r.left() == 0, "bytes after its end");
  std::vector<StepInfo> infos(seconds.size());
  for (size_t i = 0; i < infos.size(); ++i) infos[i] = {seconds[i], prompts[i], Phase(phases[i])};
  histories_ = std::move(histories);
  extras_ = std::move(extras);
  steps_ = std::move(infos);
  thinned_ = std::move(thinned);
  first_step_ = first_step;
}

std::unique_ptr<Analyzer> replay_analyzer(const RecordingReader& reader, size_t max_checkpoint_bytes) {
  auto analyzer = std::make_unique<Analyzer>(reader.header());
  if (reader.checkpoint_step() < 0) return analyzer;
  try {
    analyzer->restore_checkpoint(reader.checkpoint(), max_checkpoint_bytes);
  } catch (const Error& e) {
    throw Error(reader.path() + ":2: " + e.what());
  }
  if (analyzer->latest_step() != reader.checkpoint_step())
    throw Error(reader.path() + ":2: the checkpoint holds steps to " + std::to_string(analyzer->latest_step()) +
                ", not to step " + std::to_string(reader.checkpoint_step()) + " as it says");
  return analyzer;
}

}  // namespace h2o
