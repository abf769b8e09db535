// One step's inputs and outputs on the CUDA backend (cuda_step_io.h).
#include "kernels/cuda_step_io.h"

#include <algorithm>
#include <cstring>

#include "core/runtime/forward_plan.h"

namespace H2O_CUDA_NS {
namespace {

// memcpy for vectors that may be empty (memcpy from a null pointer is undefined, even for 0 bytes).
void put(char* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

}  // namespace
namespace cuda_impl {

StepIO::StepIO(std::span<ForwardItem> items, const kern::ModelDims& dims, int multiprocessors)
    : dims_(dims), items_(items) {
  const kern::ModelDims& d = dims_;
  caches_ = checked_caches<CudaCache>(items, {"cuda backend", d.vocab, d.layers, d.heads});
  reserve_rows(items, caches_);
  shapes_.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    kern::ItemShape& s = shapes_[i];
    s.n_before = caches_[i]->held();
    s.rows = int(items[i].tokens.size());
    s.tokens_seen = caches_[i]->tokens_seen();
    s.rule = caches_[i]->rule();
    s.low_bit = caches_[i]->low_bit();
    static_cast<LogitNeeds&>(s) = logit_needs(items[i]);
  }
  plan_ = kern::plan_step(shapes_, d.group, {d.kv_heads, multiprocessors});
  N_ = int(items.size());
  T_ = plan_.rows;
  R_ = int(plan_.classify.size());
  for (const ForwardItem& item : items) {
    captures_ = captures_ || (item.capture && item.captured && !item.capture->attention.empty());
    forced_ = forced_ || item.forced;
    any_sample_ = any_sample_ || (item.choose && item.chosen && !item.choose->sampling.greedy());
  }
  // Decode steps (one row an item, no forced scores, no logits read back) replay graphs, attention
  // captures included (their unit count is part of the key); layer states are copied after it.
  graphable_ = T_ == N_ && !forced_ &&
               std::none_of(items.begin(), items.end(), [](const ForwardItem& i) { return i.logits; });
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].forced) caches_[i]->reserve_reference(shapes_[i].forced_rows, d.vocab);
}

// The readback: chosen tokens and evicted positions first (all a plain decode
// step brings back), then forced scores, captures and layer states.
void StepIO::lay_out_readback(PassScratch& s) {
  const int N = N_, L = dims_.layers, H = dims_.kv_heads;
  chosen_at_ = out_.add(size_t(N) * 4);
  evicted_base_.assign(size_t(N), 0);
  int evicted_total = 0;
  for (int i = 0; i < N; ++i) {
    evicted_base_[size_t(i)] = evicted_total;
    evicted_total += plan_.items[size_t(i)].evicted * L * H;
  }
  evicted_at_ = out_.add(size_t(evicted_total) * 4);
  counts_at_.assign(size_t(N), 0);
  for (int i = 0; i < N; ++i)
    if (caches_[size_t(i)]->low_bit()) counts_at_[size_t(i)] = out_.add(counts_bytes());
  plain_end_ = out_.size();
  forced_at_.assign(size_t(N), 0);
  for (int i = 0; i < N; ++i)
    if (items_[size_t(i)].forced && items_[size_t(i)].scores)
      forced_at_[size_t(i)] = out_.add(size_t(shapes_[size_t(i)].forced_rows) * 3 * 8, 8);

  // Captures: the full rows of each captured (item, layer), the units that trim them.
  std::vector<kern::CaptureJob> jobs;
  for (int i = 0; captures_ && i < N; ++i) {
    const ForwardItem& item = items_[size_t(i)];
    if (item.capture && item.captured)
      jobs.push_back({i, plan_.items[size_t(i)].keys, shapes_[size_t(i)].rows, shapes_[size_t(i)].tokens_seen,
                      &item.capture->attention, item.captured});
  }
  capture_.emplace(jobs, N, dims_, out_, capture_lists_);
  s.grow(s.capture_probs, capture_->probs_floats() * 4);
  s.grow(s.capture_work, capture_->work_floats() * 4);

  for (int i = 0; i < N; ++i) {
    const ForwardItem& item = items_[size_t(i)];
    if (!item.capture || !item.layer_states) continue;
    const int kept = plan_.items[size_t(i)].kept;
    for (int layer : item.capture->layer_states) {
      LayerReadout lr;
      lr.item = size_t(i);
      lr.layer = layer;
      lr.positions = out_.add(size_t(H) * kept * 4);
      lr.scores = out_.add(size_t(H) * kept * 4);
      layer_readouts_.push_back(lr);
    }
  }
  s.grow(s.readback, out_.size());
  s.readback_host.reserve(out_.size());
}

// The inputs block (copied up in one piece) and the pass's arguments: the
// fixed-offset parts first, the capture lists last, so a graph serves every
// step of its key.
void StepIO::write_inputs(PassScratch& s) {
  const int N = N_, T = T_, R = R_;
  kern::BlockLayout& in = in_;
  const std::vector<kern::CaptureSlot> slots =
      captures_ ? capture_->slots(s.capture_probs.as<float>()) : std::vector<kern::CaptureSlot>{};
  const size_t tokens_at = in.add(size_t(T) * 4);
  const size_t row_item_at = in.add(size_t(T) * 4);
  const size_t items_at = in.add(size_t(N) * sizeof(kern::ItemDesc));
  const size_t tiles_at = in.add(plan_.tiles.size() * sizeof(kern::RowTile));
  const size_t classify_at = in.add(size_t(R) * 4);
  const size_t choose_at = in.add(size_t(N) * sizeof(kern::ChooseDesc));
  int forced_count = 0;
  for (int i = 0; i < N; ++i)
    if (items_[size_t(i)].forced && items_[size_t(i)].scores) forced_count += shapes_[size_t(i)].forced_rows;
  const size_t forced_rows_at = in.add(size_t(forced_count) * sizeof(kern::ForcedRow));
  const size_t slots_at = in.add(slots.size() * sizeof(kern::CaptureSlot));
  const size_t units_at = in.add(capture_->unit_count() * sizeof(kern::CaptureUnit));
  const size_t lists_at = in.add(capture_lists_.size(), 256);  // kept-slot lists: their length changes every step
  s.grow(s.inputs, in.size());
  s.inputs_host.reserve(in.size());
  char* host = static_cast<char*>(s.inputs_host.get());
  char* dev = s.inputs.as<char>();

  int* tokens = reinterpret_cast<int*>(host + tokens_at);
  for (int i = 0; i < N; ++i)
    std::copy(items_[size_t(i)].tokens.begin(), items_[size_t(i)].tokens.end(),
              tokens + plan_.items[size_t(i)].first_row);
  put(host + row_item_at, plan_.row_item.data(), size_t(T) * 4);
  write_item_descs(reinterpret_cast<kern::ItemDesc*>(host + items_at));
  put(host + tiles_at, plan_.tiles.data(), plan_.tiles.size() * sizeof(kern::RowTile));
  put(host + classify_at, plan_.classify.data(), size_t(R) * 4);
  write_choices(s, reinterpret_cast<kern::ChooseDesc*>(host + choose_at));
  write_forced_rows(s, reinterpret_cast<kern::ForcedRow*>(host + forced_rows_at));
  put(host + slots_at, slots.data(), slots.size() * sizeof(kern::CaptureSlot));
  const std::vector<kern::CaptureUnit> units =
      capture_->units(s.capture_probs.as<float>(), s.capture_work.as<float>(), dev + lists_at, s.readback.as<char>());
  put(host + units_at, units.data(), units.size() * sizeof(kern::CaptureUnit));
  capture_->write_lists(host + lists_at);

  StepArgs& a = args_;
  a.items = N;
  a.rows = T;
  a.tiles = int(plan_.tiles.size());
  a.tile_queries = plan_.tile_queries;
  a.low_bit_tiles = plan_.low_bit_tiles;
  a.classified = R;
  a.forced = forced_count;
  a.units = int(units.size());
  a.tokens = reinterpret_cast<const int*>(dev + tokens_at);
  a.row_item = reinterpret_cast<const int*>(dev + row_item_at);
  a.item_desc = reinterpret_cast<const kern::ItemDesc*>(dev + items_at);
  a.tile_desc = reinterpret_cast<const kern::RowTile*>(dev + tiles_at);
  a.classify = reinterpret_cast<const int*>(dev + classify_at);
  a.choose = reinterpret_cast<const kern::ChooseDesc*>(dev + choose_at);
  a.forced_rows = reinterpret_cast<const kern::ForcedRow*>(dev + forced_rows_at);
  a.capture_slots = captures_ ? reinterpret_cast<const kern::CaptureSlot*>(dev + slots_at) : nullptr;
  a.capture_units = reinterpret_cast<const kern::CaptureUnit*>(dev + units_at);
  a.attention = {s.attn_logits.as<float>(), plan_.key_stride, s.partials.as<float>(), plan_.split_bucket,
                 s.stats.as<float>(), plan_.split_keys, s.arrivals.as<int>()};
  a.evicted = reinterpret_cast<int32_t*>(s.readback.as<char>() + evicted_at_);
  a.any_cut = plan_.any_cut;
  a.any_forced = forced_;
  a.rope_slots = s.rope_slots.as<float>();
  for (int i = 0; i < N; ++i)
    a.kv_bytes_per_layer += caches_[size_t(i)]->attention_bytes_per_layer(plan_.items[size_t(i)].keys);
}

// Each item's cache and cut, as the kernels read them.
void StepIO::write_item_descs(kern::ItemDesc* desc) const {
  for (int i = 0; i < N_; ++i) {
    const kern::ItemShape& s = shapes_[size_t(i)];
    const kern::ItemPlan& p = plan_.items[size_t(i)];
    kern::ItemDesc it;
    it.cache = caches_[size_t(i)]->arrays();
    it.tokens_seen = s.tokens_seen;
    it.n_before = s.n_before;
    it.rows = s.rows;
    it.first_row = p.first_row;
    it.rolling = s.rule.rolling ? 1 : 0;
    it.score = s.rule.score;
    it.cut = p.cut ? 1 : 0;
    it.sinks = s.rule.sinks;
    it.recent = s.rule.recent;
    it.by_score = s.rule.by_score;
    it.kept = p.kept;
    it.evicted_base = evicted_base_[size_t(i)];
    desc[i] = it;
  }
}

// How each item's next token is chosen (greedy or sampled), and where it lands.
void StepIO::write_choices(const PassScratch& s, kern::ChooseDesc* choose) const {
  for (int i = 0; i < N_; ++i) {
    const ForwardItem& item = items_[size_t(i)];
    kern::ChooseDesc c;
    c.out = reinterpret_cast<int32_t*>(s.readback.as<char>() + chosen_at_) + i;
    if (shapes_[size_t(i)].choose) {
      const SamplingConfig& sc = item.choose->sampling;
      c.mode = sc.greedy() ? 1 : 2;
      c.logits_row = plan_.items[size_t(i)].logit_row.back();
      c.temperature = sc.temperature;
      c.top_p = sc.top_p;
      c.uniform = item.choose->uniform;
    }
    choose[i] = c;
  }
}

// Forced mode: which cache's stored rows each item compares with (decided
// now, after every forced item of this call has claimed its rows of this
// step), and each scored row's target and outputs.
void StepIO::write_forced_rows(const PassScratch& s, kern::ForcedRow* forced_rows) {
  const int N = N_;
  for (int i = 0; i < N; ++i)
    if (items_[size_t(i)].forced)
      caches_[size_t(i)]->mark_forced_rows(shapes_[size_t(i)].forced_rows,
                                             shapes_[size_t(i)].tokens_seen + shapes_[size_t(i)].rows);
  compared_.assign(size_t(N), false);
  for (int i = 0, k = 0; i < N; ++i) {
    const ForwardItem& item = items_[size_t(i)];
    if (!item.forced || !item.scores) continue;
    const auto* reference = static_cast<const CudaCache*>(caches_[size_t(i)]->same_step_reference(item.forced->reference));
    const int rows = shapes_[size_t(i)].forced_rows;
    const bool compared = reference != nullptr;
    compared_[size_t(i)] = compared;
    for (int r = 0; r < rows; ++r, ++k) {
      kern::ForcedRow f;
      f.logits_row = plan_.items[size_t(i)].logit_row[size_t(r)];
      f.target = item.forced->next[size_t(r)];
      if (compared) {
        f.ref_logits = reference->reference_logits() + size_t(r) * dims_.vocab;
        f.ref_logz = reference->reference_log_z() + r;
      }
      f.out = reinterpret_cast<double*>(s.readback.as<char>() + forced_at_[size_t(i)]) + size_t(r) * 3;
      forced_rows[k] = f;
    }
  }
}

// What came back, to each item and its cache: the chosen token, the evicted
// positions (checked against the host's count), layer states, forced scores,
// captures.
void StepIO::deliver(const PassScratch& s) const {
  const char* back = static_cast<const char*>(s.readback_host.get());
  const int L = dims_.layers, H = dims_.kv_heads;
  for (int i = 0; i < N_; ++i) {
    const ForwardItem& item = items_[size_t(i)];
    const kern::ItemPlan& p = plan_.items[size_t(i)];
    if (shapes_[size_t(i)].choose) *item.chosen = reinterpret_cast<const int32_t*>(back + chosen_at_)[i];
    std::vector<EvictionEvent> events;
    if (p.cut) {
      const int32_t* e = reinterpret_cast<const int32_t*>(back + evicted_at_) + evicted_base_[size_t(i)];
      for (int l = 0; l < L; ++l)
        for (int g = 0; g < H; ++g)
          for (int k = 0; k < p.evicted; ++k) {
            const int32_t position = e[(size_t(l) * H + g) * p.evicted + k];
            if (position < 0)
              throw Error("cuda backend: the device's cut disagrees with the host's count (a bug; please report)");
            events.push_back({l, g, position});
          }
    }
    std::map<int, LayerState> states = layer_states_of(size_t(i), back);
    if (item.capture && item.layer_states) {
      item.layer_states->clear();
      for (int layer : item.capture->layer_states) item.layer_states->push_back(states.at(layer));
    }
    std::vector<int32_t> counts;
    if (caches_[size_t(i)]->low_bit()) {
      const auto* c = reinterpret_cast<const int32_t*>(back + counts_at_[size_t(i)]);
      counts.assign(c, c + counts_bytes() / sizeof(int32_t));
    }
    caches_[size_t(i)]->end_forward(shapes_[size_t(i)].rows, p.kept,
                                      EvictionSummary::from_events(std::move(events), L, H), std::move(states),
                                      std::move(counts));
    if (item.forced && item.scores) {
      *item.scores = {};
      const auto* f = reinterpret_cast<const double*>(back + forced_at_[size_t(i)]);
      for (int r = 0; r < shapes_[size_t(i)].forced_rows; ++r) {
        item.scores->nll.push_back(f[r * 3]);
        if (!compared_[size_t(i)]) continue;
        item.scores->kl.push_back(f[r * 3 + 1]);
        item.scores->agree.push_back(f[r * 3 + 2] != 0 ? 1 : 0);
      }
    }
  }
  capture_->read(back);
}

void StepIO::enqueue_readback(PassScratch& s, gpu::Stream stream) const {
  char* readback = s.readback.as<char>();
  const int H = dims_.kv_heads;
  for (const LayerReadout& lr : layer_readouts_) {
    const kern::CacheArrays arrays = caches_[lr.item]->arrays();
    const int kept = plan_.items[lr.item].kept;
    const size_t first = size_t(lr.layer) * H * size_t(arrays.cap);
    gpu::copy_rows_on_device(readback + lr.positions, size_t(kept) * 4, arrays.pos + first, size_t(arrays.cap) * 4,
                             size_t(kept) * 4, size_t(H), stream);
    gpu::copy_rows_on_device(readback + lr.scores, size_t(kept) * 4, arrays.score + first, size_t(arrays.cap) * 4,
                             size_t(kept) * 4, size_t(H), stream);
  }
  for (int i = 0; i < N_; ++i)
    if (caches_[size_t(i)]->low_bit())
      gpu::copy_on_device(readback + counts_at_[size_t(i)], caches_[size_t(i)]->arrays().low.counts, counts_bytes(),
                          stream);
  // Plain decode steps bring back only the chosen tokens, the evicted positions and quantized caches' counts.
  const bool plain = graphable_ && !captures_ && layer_readouts_.empty();
  gpu::copy_to_host(s.readback_host.get(), readback, plain ? plain_end_ : out_.size(), stream);
  for (int i = 0; i < N_; ++i) {
    const ForwardItem& item = items_[size_t(i)];
    if (!item.logits) continue;
    const int rows = item.all_logits ? shapes_[size_t(i)].rows : 1;
    const int first = plan_.items[size_t(i)].logit_row[size_t(shapes_[size_t(i)].rows - rows)];
    item.logits->resize(size_t(rows) * dims_.vocab);
    gpu::copy_to_host(item.logits->data(), s.logits.as<float>() + size_t(first) * dims_.vocab,
                      item.logits->size() * sizeof(float), stream);
  }
}

// The layer states item `item` asked for, from the readback's host copy.
std::map<int, LayerState> StepIO::layer_states_of(size_t item, const char* back) const {
  const int kept = plan_.items[item].kept;
  std::map<int, LayerState> states;
  for (const LayerReadout& lr : layer_readouts_) {
    if (lr.item != item) continue;
    LayerState& state = states[lr.layer];
    state.layer = lr.layer;
    for (int g = 0; g < dims_.kv_heads; ++g) {
      const auto* pos = reinterpret_cast<const int32_t*>(back + lr.positions) + size_t(g) * kept;
      const auto* sc = reinterpret_cast<const float*>(back + lr.scores) + size_t(g) * kept;
      state.positions.emplace_back(pos, pos + kept);
      state.scores.emplace_back(sc, sc + kept);
    }
  }
  return states;
}

}  // namespace cuda_impl
}  // namespace H2O_CUDA_NS
