// The analyzer's checkpoint: its whole history (stream_history.h, the per-head
// table of head_evictions.h) and the rest it keeps (curves, score histories,
// the steps' times), written as plain arrays into one zstd frame, and read
// back with every size and order checked, so that a damaged checkpoint is one
// Error and never a crash in a snapshot later. The window of newest captures
// is not kept: the steps that follow a checkpoint in a recording refill it.
#include <algorithm>
#include <cstring>
#include <utility>

#include "core/analysis/analyzer.h"
#include "core/analysis/head_evictions.h"
#include "core/analysis/stream_history.h"
#include "core/base/error.h"
#include "core/base/packed_bytes.h"
#include "core/recording/checkpoint_stream.h"

namespace h2o {

namespace {

// 2: a policy's per-head table may hold a summary of its older positions
// (head_summary.h); format 1's tables are all exact, and are read still.
// 3: the needle and its asks follow the histories (needle_watch.h); 1 and 2 have none.
constexpr uint64_t kCheckpointFormat = 3;
// A policy's per-head table: none, all exact (format 1), or summary + exact.
constexpr uint8_t kNoHeads = 0, kExactHeads = 1, kSummarisedHeads = 2;
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

void HeadSummary::save(CheckpointWriter& out) const {
  PackedWriter& w = out.bytes();
  w.varint(uint64_t(end_));
  for (const Chunk& chunk : chunks_) {
    w.array(chunk.first_span);
    w.array(chunk.spans);
    out.spill();
  }
  for (const auto& list : exact_) w.array(list);
  out.spill();
}

HeadSummary HeadSummary::load(PackedReader& in, int64_t heads, std::span<const int32_t> birth) {
  HeadSummary s(heads);
  const uint64_t end = in.varint();
  require(end % uint64_t(kGroup) == 0 && end <= birth.size(), "a per-head summary past its positions");
  s.end_ = int64_t(end);
  for (int64_t groups = s.end_ / kGroup; groups > 0; groups -= kChunkGroups) {
    Chunk& chunk = s.chunks_.emplace_back();
    chunk.first_span = in.array<uint32_t>();
    require(chunk.first_span.size() == size_t(std::min(groups, kChunkGroups) * heads) + 1 &&
                chunk.first_span.front() == 0 && ascending(chunk.first_span),
            "a per-head summary's groups out of order");
    chunk.spans = in.array<Span>();
    require(chunk.first_span.back() == chunk.spans.size(), "a per-head summary of another count of spans");
    for (const Span& sp : chunk.spans) {
      const int fate = int(fate_of(sp));
      const bool marker = fate == int(Fate::Unborn) && from_of(sp) == 0 && sp.to == 0;
      require(marker || (fate > int(Fate::Unborn) && fate < kFateCount && from_of(sp) <= kMaxStep &&
                         (sp.to == kNever || (sp.to > from_of(sp) && sp.to <= kMaxStep))),
              "a per-head summary's span out of range");
    }
  }
  for (auto& list : s.exact_) {
    list = in.array<Exact>();
    int64_t before = -1;
    for (const Exact& e : list) {
      require(e.position > before && e.position < s.end_, "a summarised position out of order");
      require(e.step == -1 || (e.step >= birth[size_t(e.position)] && e.step < kMaxStep),
              "a summarised position's eviction step out of range");
      before = e.position;
    }
  }
  return s;
}

void HeadEvictions::save(CheckpointWriter& out, std::span<const int32_t> birth) const {
  PackedWriter& w = out.bytes();
  w.varint(uint64_t(base_));
  summary_.save(out);
  w.varint(uint64_t(length_));
  for (int64_t head = 0; head < heads_; ++head) {
    const int layer = int(head / kv_heads_), kv = int(head % kv_heads_);
    int64_t before = -1;  // held
    const std::vector<int32_t> steps = column(layer, kv, birth);
    for (int64_t p = base_; p < length_; ++p) {
      w.signed_varint(int64_t(steps[size_t(p)]) - before);
      before = steps[size_t(p)];
    }
    out.spill();
  }
}

HeadEvictions HeadEvictions::load(PackedReader& in, int layers, int kv_heads, std::span<const int32_t> birth,
                                  bool summarised, int64_t exact_positions) {
  HeadEvictions table(layers, kv_heads, exact_positions);
  require(table.heads_ > 0, "a per-head table without heads");
  if (summarised) {
    const uint64_t base = in.varint();
    require(base % uint64_t(kBlock) == 0 && base <= birth.size(), "a per-head table's summary past its positions");
    table.summary_ = HeadSummary::load(in, table.heads_, birth);
    require(table.summary_.end() == int64_t(base), "a per-head summary of another length than its table's");
    table.base_ = table.length_ = int64_t(base);
  }
  const uint64_t length = in.varint();
  // Each exact position takes a byte a head at least: checked before anything is allocated.
  require(length == birth.size() && length - uint64_t(table.base_) <= in.left() / uint64_t(table.heads_),
          "a per-head table of another length than its positions");
  while (table.length_ < int64_t(length)) table.add_position();
  for (int64_t head = 0; head < table.heads_; ++head) {
    int64_t step = -1;
    for (int64_t p = table.base_; p < int64_t(length); ++p) {
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
  w.byte(per_head_ ? kSummarisedHeads : kNoHeads);
  if (per_head_) {
    per_head_->save(out, birth_);
    // A layer's merged steps and counts follow from the heads' exact steps:
    // written only where those are summarised.
    const size_t summarised = size_t(per_head_->summarised_end());
    for (int layer = 0; layer < layers_; ++layer) {
      w.array(evict_layer_[size_t(layer)].data(), summarised);
      w.array(gone_heads_[size_t(layer)].data(), summarised);
    }
    out.spill();
  }
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
  const uint8_t heads = in.byte();
  require(heads == kNoHeads || heads == kExactHeads || heads == kSummarisedHeads, "a per-head table of an unknown form");
  if (heads != kNoHeads) {
    require(evict_all_.empty(), "evictions both everywhere and per head");
    per_head_.emplace(HeadEvictions::load(in, layers_, kv_heads_, birth_, heads == kSummarisedHeads, exact_head_positions_));
    const size_t summarised = size_t(per_head_->summarised_end());
    evict_layer_.assign(size_t(layers_), {});
    gone_heads_.assign(size_t(layers_), {});
    for (int layer = 0; layer < layers_ && heads == kSummarisedHeads; ++layer) {
      auto& last = evict_layer_[size_t(layer)];
      auto& gone = gone_heads_[size_t(layer)];
      last = in.array<int32_t>();
      gone = in.array<uint16_t>();
      require(last.size() == summarised && gone.size() == summarised, "a layer's summarised steps of another length");
      for (size_t p = 0; p < summarised; ++p)
        require(gone[p] <= kv_heads_ && (gone[p] == kv_heads_) == (last[p] >= 0) &&
                    (last[p] < 0 || (last[p] >= birth_[p] && last[p] < kMaxStep)),
                "a layer's summarised step out of range");
    }
    merge_layers(int64_t(summarised));
    per_head_->summarise_old(rule_, birth_);
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

void PolicyHistory::merge_layers(int64_t from) {
  const size_t n = size_t(length()), first = size_t(from);
  for (int layer = 0; layer < layers_; ++layer) {
    evict_layer_[size_t(layer)].resize(n, -1);
    gone_heads_[size_t(layer)].resize(n, 0);
  }
  for (int layer = 0; layer < layers_; ++layer)
    for (int kv = 0; kv < kv_heads_; ++kv) {
      const std::vector<int32_t> steps = per_head_->column(layer, kv, birth_);
      auto& last = evict_layer_[size_t(layer)];
      auto& gone = gone_heads_[size_t(layer)];
      for (size_t p = first; p < n; ++p) {
        if (steps[p] < 0) continue;
        gone[p] += 1;
        last[p] = std::max(last[p], steps[p]);
      }
    }
  // A layer's step is its last head's: only where every head has let go.
  for (int layer = 0; layer < layers_; ++layer)
    for (size_t p = first; p < n; ++p)
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
  needle_.save(w);
  return checkpoint.finish();
}

void Analyzer::restore_checkpoint(std::string_view frame, size_t max_bytes) {
  require(steps_.empty(), "restored into an analyzer that has steps");
  const std::string raw = unpack_checkpoint(frame, max_bytes);
  PackedReader r(raw, "checkpoint");
  const uint64_t format = r.varint();
  require(format >= 1 && format <= kCheckpointFormat, "of a format this build does not read");
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
  NeedleWatch needle = format >= 3 ? NeedleWatch::load(r, histories_.size(), first_step + steps) : NeedleWatch(histories_.size());
  require(r.left() == 0, "bytes after its end");
  std::vector<StepInfo> infos(seconds.size());
  for (size_t i = 0; i < infos.size(); ++i) infos[i] = {seconds[i], prompts[i], Phase(phases[i])};
  histories_ = std::move(histories);
  extras_ = std::move(extras);
  steps_ = std::move(infos);
  thinned_ = std::move(thinned);
  needle_ = std::move(needle);
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
