// One step's inputs and outputs on the CUDA backend: the plan from host
// bookkeeping (kernels/step_plan.h), the scratch it needs, the layout of
// the readback, the one inputs block written and copied up, and each item
// handed what came back.
#include "kernels/cuda_backend_impl.h"

namespace H2O_CUDA_NS {
namespace {

// memcpy for vectors that may be empty (memcpy from a null pointer is undefined, even for 0 bytes).
void put(char* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

}  // namespace
namespace cuda_impl {

// Checks that need no device and room in every cache (before anything ran),
// then the plan: rows, tiles, splits, cuts, classified rows.
Step CudaBackend::plan_forward(std::span<ForwardItem> items) {
  const kern::ModelDims& d = dims_;
  Step st;
  st.items = items;
  st.caches = checked_caches<CudaCache>(items, {"cuda backend", cfg_.vocab_size, d.layers, d.heads});
  reserve_rows(items, st.caches);
  st.shapes.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    kern::ItemShape& s = st.shapes[i];
    s.n_before = st.caches[i]->held();
    s.rows = int(items[i].tokens.size());
    s.tokens_seen = st.caches[i]->tokens_seen();
    s.rule = st.caches[i]->rule();
    s.low_bit = st.caches[i]->low_bit();
    static_cast<LogitNeeds&>(s) = logit_needs(items[i]);
  }
  st.plan = kern::plan_step(st.shapes, d.group, {d.kv_heads, info_.multiprocessors});
  st.N = int(items.size());
  st.T = st.plan.rows;
  st.R = int(st.plan.classify.size());
  for (const ForwardItem& item : items) {
    st.captures = st.captures || (item.capture && item.captured && !item.capture->attention.empty());
    st.forced = st.forced || item.forced;
    st.any_sample = st.any_sample || (item.choose && item.chosen && !item.choose->sampling.greedy());
  }
  // Decode steps (one row an item, no forced scores, no logits read back) replay graphs, attention
  // captures included (their unit count is part of the key); layer states are copied after it.
  st.graphable = st.T == st.N && !st.forced &&
                 std::none_of(items.begin(), items.end(), [](const ForwardItem& i) { return i.logits; });
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].forced) st.caches[i]->reserve_reference(st.shapes[i].forced_rows, d.vocab);
  return st;
}

// Activations and scratch for the step's rows, keys and classified rows.
void CudaBackend::grow_scratch(const Step& st) {
  const kern::ModelDims& d = dims_;
  const size_t elem = size_t(dtype_size(storage_)), T = size_t(st.T), R = size_t(std::max(st.R, 1));
  grow(x_, T * d.dim * 4);
  grow(xb_, T * d.dim * elem);
  grow(qkv_, T * d.qkv_stride * 4);
  grow(att_, T * d.q_dim * elem);
  grow(gate_up_, T * 2 * d.hidden * 4);
  grow(hidden_, T * d.hidden * elem);
  grow(attn_logits_, T * d.heads * st.plan.key_stride * 4);
  grow(partials_, T * d.heads * st.plan.split_bucket * (d.head_dim + 2) * 4);
  grow(stats_, T * d.heads * 2 * 4);
  grow(classify_in_, R * d.dim * elem);
  grow(logits_, R * d.vocab * 4);
  grow(log_z_, R * 8);
  if (st.any_sample) grow(sample_scratch_, size_t(st.N) * d.vocab * 8);
  if (st.plan.any_cut) grow(order_, size_t(st.N) * d.layers * d.kv_heads * st.plan.key_stride * 4);
  // The rolling caches cut in this step keep slots below these; the table's address goes into
  // every pass (null until one is needed), so a graph captured without a rolling cut serves one too.
  for (int i = 0; i < st.N; ++i)
    if (st.plan.items[size_t(i)].cut && st.shapes[size_t(i)].rule.rolling) cover_rope_slots(st.plan.items[size_t(i)].kept);
}

// The readback: chosen tokens and evicted positions first (all a plain decode
// step brings back), then forced scores, captures and layer states.
void CudaBackend::lay_out_readback(Step& st) {
  const int N = st.N, L = dims_.layers, H = dims_.kv_heads;
  st.chosen_at = st.out.add(size_t(N) * 4);
  st.evicted_base.assign(size_t(N), 0);
  int evicted_total = 0;
  for (int i = 0; i < N; ++i) {
    st.evicted_base[size_t(i)] = evicted_total;
    evicted_total += st.plan.items[size_t(i)].evicted * L * H;
  }
  st.evicted_at = st.out.add(size_t(evicted_total) * 4);
  st.counts_at.assign(size_t(N), 0);
  for (int i = 0; i < N; ++i)
    if (st.caches[size_t(i)]->low_bit()) st.counts_at[size_t(i)] = st.out.add(counts_bytes());
  st.plain_end = st.out.size();
  st.forced_at.assign(size_t(N), 0);
  for (int i = 0; i < N; ++i)
    if (st.items[size_t(i)].forced && st.items[size_t(i)].scores)
      st.forced_at[size_t(i)] = st.out.add(size_t(st.shapes[size_t(i)].forced_rows) * 3 * 8, 8);

  // Captures: the full rows of each captured (item, layer), the units that trim them.
  std::vector<kern::CaptureJob> jobs;
  for (int i = 0; st.captures && i < N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    if (item.capture && item.captured)
      jobs.push_back({i, st.plan.items[size_t(i)].keys, st.shapes[size_t(i)].rows, st.shapes[size_t(i)].tokens_seen,
                      &item.capture->attention, item.captured});
  }
  st.capture.emplace(jobs, N, dims_, st.out, st.capture_lists);
  grow(capture_probs_, st.capture->probs_floats() * 4);
  grow(capture_work_, st.capture->work_floats() * 4);

  for (int i = 0; i < N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    if (!item.capture || !item.layer_states) continue;
    const int kept = st.plan.items[size_t(i)].kept;
    for (int layer : item.capture->layer_states) {
      LayerReadout lr;
      lr.item = size_t(i);
      lr.layer = layer;
      lr.positions = st.out.add(size_t(H) * kept * 4);
      lr.scores = st.out.add(size_t(H) * kept * 4);
      st.layer_readouts.push_back(lr);
    }
  }
  grow(readback_, st.out.size());
  readback_host_.reserve(st.out.size());
}

// The inputs block (copied up in one piece) and the pass's arguments: the
// fixed-offset parts first, the capture lists last, so a graph serves every
// step of its key.
void CudaBackend::write_inputs(Step& st) {
  const int N = st.N, T = st.T, R = st.R;
  kern::BlockLayout& in = st.in;
  const std::vector<kern::CaptureSlot> slots =
      st.captures ? st.capture->slots(capture_probs_.as<float>()) : std::vector<kern::CaptureSlot>{};
  const size_t tokens_at = in.add(size_t(T) * 4);
  const size_t row_item_at = in.add(size_t(T) * 4);
  const size_t items_at = in.add(size_t(N) * sizeof(kern::ItemDesc));
  const size_t tiles_at = in.add(st.plan.tiles.size() * sizeof(kern::RowTile));
  const size_t classify_at = in.add(size_t(R) * 4);
  const size_t choose_at = in.add(size_t(N) * sizeof(kern::ChooseDesc));
  int forced_count = 0;
  for (int i = 0; i < N; ++i)
    if (st.items[size_t(i)].forced && st.items[size_t(i)].scores) forced_count += st.shapes[size_t(i)].forced_rows;
  const size_t forced_rows_at = in.add(size_t(forced_count) * sizeof(kern::ForcedRow));
  const size_t slots_at = in.add(slots.size() * sizeof(kern::CaptureSlot));
  const size_t units_at = in.add(st.capture->unit_count() * sizeof(kern::CaptureUnit));
  const size_t lists_at = in.add(st.capture_lists.size(), 256);  // kept-slot lists: their length changes every step
  grow(inputs_, in.size());
  inputs_host_.reserve(in.size());
  char* host = static_cast<char*>(inputs_host_.get());
  char* dev = inputs_.as<char>();

  int* tokens = reinterpret_cast<int*>(host + tokens_at);
  for (int i = 0; i < N; ++i)
    std::copy(st.items[size_t(i)].tokens.begin(), st.items[size_t(i)].tokens.end(),
              tokens + st.plan.items[size_t(i)].first_row);
  put(host + row_item_at, st.plan.row_item.data(), size_t(T) * 4);
  write_item_descs(st, reinterpret_cast<kern::ItemDesc*>(host + items_at));
  put(host + tiles_at, st.plan.tiles.data(), st.plan.tiles.size() * sizeof(kern::RowTile));
  put(host + classify_at, st.plan.classify.data(), size_t(R) * 4);
  write_choices(st, reinterpret_cast<kern::ChooseDesc*>(host + choose_at));
  write_forced_rows(st, reinterpret_cast<kern::ForcedRow*>(host + forced_rows_at));
  put(host + slots_at, slots.data(), slots.size() * sizeof(kern::CaptureSlot));
  const std::vector<kern::CaptureUnit> units =
      st.capture->units(capture_probs_.as<float>(), capture_work_.as<float>(), dev + lists_at, readback_.as<char>());
  put(host + units_at, units.data(), units.size() * sizeof(kern::CaptureUnit));
  st.capture->write_lists(host + lists_at);

  StepArgs& a = st.args;
  a.items = N;
  a.rows = T;
  a.tiles = int(st.plan.tiles.size());
  a.tile_queries = st.plan.tile_queries;
  a.low_bit_tiles = st.plan.low_bit_tiles;
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
  a.capture_slots = st.captures ? reinterpret_cast<const kern::CaptureSlot*>(dev + slots_at) : nullptr;
  a.capture_units = reinterpret_cast<const kern::CaptureUnit*>(dev + units_at);
  a.attention = {attn_logits_.as<float>(), st.plan.key_stride, partials_.as<float>(), st.plan.split_bucket,
                 stats_.as<float>(), st.plan.split_keys};
  a.evicted = reinterpret_cast<int32_t*>(readback_.as<char>() + st.evicted_at);
  a.any_cut = st.plan.any_cut;
  a.any_forced = st.forced;
  a.rope_slots = rope_slots_.as<float>();
  for (int i = 0; i < N; ++i)
    a.kv_bytes_per_layer += st.caches[size_t(i)]->attention_bytes_per_layer(st.plan.items[size_t(i)].keys);
}

// Each item's cache and cut, as the kernels read them.
void CudaBackend::write_item_descs(const Step& st, kern::ItemDesc* desc) const {
  for (int i = 0; i < st.N; ++i) {
    const kern::ItemShape& s = st.shapes[size_t(i)];
    const kern::ItemPlan& p = st.plan.items[size_t(i)];
    kern::ItemDesc it;
    it.cache = st.caches[size_t(i)]->arrays();
    it.tokens_seen = s.tokens_seen;
    it.n_before = s.n_before;
    it.rows = s.rows;
    it.first_row = p.first_row;
    it.rolling = s.rule.rolling ? 1 : 0;
    it.current_scores = s.rule.score == ScoreKind::Current ? 1 : 0;
    it.cut = p.cut ? 1 : 0;
    it.sinks = s.rule.sinks;
    it.recent = s.rule.recent;
    it.by_score = s.rule.by_score;
    it.kept = p.kept;
    it.evicted_base = st.evicted_base[size_t(i)];
    desc[i] = it;
  }
}

// How each item's next token is chosen (greedy or sampled), and where it lands.
void CudaBackend::write_choices(const Step& st, kern::ChooseDesc* choose) const {
  for (int i = 0; i < st.N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    kern::ChooseDesc c;
    c.out = reinterpret_cast<int32_t*>(readback_.as<char>() + st.chosen_at) + i;
    if (st.shapes[size_t(i)].choose) {
      const SamplingConfig& sc = item.choose->sampling;
      c.mode = sc.greedy() ? 1 : 2;
      c.logits_row = st.plan.items[size_t(i)].logit_row.back();
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
void CudaBackend::write_forced_rows(Step& st, kern::ForcedRow* forced_rows) const {
  const int N = st.N;
  for (int i = 0; i < N; ++i)
    if (st.items[size_t(i)].forced)
      st.caches[size_t(i)]->mark_forced_rows(st.shapes[size_t(i)].forced_rows,
                                             st.shapes[size_t(i)].tokens_seen + st.shapes[size_t(i)].rows);
  st.compared.assign(size_t(N), false);
  for (int i = 0, k = 0; i < N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    if (!item.forced || !item.scores) continue;
    const auto* reference = static_cast<const CudaCache*>(st.caches[size_t(i)]->same_step_reference(item.forced->reference));
    const int rows = st.shapes[size_t(i)].forced_rows;
    const bool compared = reference != nullptr;
    st.compared[size_t(i)] = compared;
    for (int r = 0; r < rows; ++r, ++k) {
      kern::ForcedRow f;
      f.logits_row = st.plan.items[size_t(i)].logit_row[size_t(r)];
      f.target = item.forced->next[size_t(r)];
      if (compared) {
        f.ref_logits = reference->reference_logits() + size_t(r) * dims_.vocab;
        f.ref_logz = reference->reference_log_z() + r;
      }
      f.out = reinterpret_cast<double*>(readback_.as<char>() + st.forced_at[size_t(i)]) + size_t(r) * 3;
      forced_rows[k] = f;
    }
  }
}

// What came back, to each item and its cache: the chosen token, the evicted
// positions (checked against the host's count), layer states, forced scores,
// captures.
void CudaBackend::deliver(const Step& st) {
  const char* back = static_cast<const char*>(readback_host_.get());
  const int L = dims_.layers, H = dims_.kv_heads;
  for (int i = 0; i < st.N; ++i) {
    const ForwardItem& item = st.items[size_t(i)];
    const kern::ItemPlan& p = st.plan.items[size_t(i)];
    if (st.shapes[size_t(i)].choose) *item.chosen = reinterpret_cast<const int32_t*>(back + st.chosen_at)[i];
    std::vector<EvictionEvent> events;
    if (p.cut) {
      const int32_t* e = reinterpret_cast<const int32_t*>(back + st.evicted_at) + st.evicted_base[size_t(i)];
      for (int l = 0; l < L; ++l)
        for (int g = 0; g < H; ++g)
          for (int k = 0; k < p.evicted; ++k) {
            const int32_t position = e[(size_t(l) * H + g) * p.evicted + k];
            if (position < 0)
              throw Error("cuda backend: the device's cut disagrees with the host's count (a bug; please report)");
            events.push_back({l, g, position});
          }
    }
    std::map<int, LayerState> states = layer_states_of(st, size_t(i), back);
    if (item.capture && item.layer_states) {
      item.layer_states->clear();
      for (int layer : item.capture->layer_states) item.layer_states->push_back(states.at(layer));
    }
    std::vector<int32_t> counts;
    if (st.caches[size_t(i)]->low_bit()) {
      const auto* c = reinterpret_cast<const int32_t*>(back + st.counts_at[size_t(i)]);
      counts.assign(c, c + counts_bytes() / sizeof(int32_t));
    }
    st.caches[size_t(i)]->end_forward(st.shapes[size_t(i)].rows, p.kept,
                                      EvictionSummary::from_events(std::move(events), L, H), std::move(states),
                                      std::move(counts));
    if (item.forced && item.scores) {
      *item.scores = {};
      const auto* f = reinterpret_cast<const double*>(back + st.forced_at[size_t(i)]);
      for (int r = 0; r < st.shapes[size_t(i)].forced_rows; ++r) {
        item.scores->nll.push_back(f[r * 3]);
        if (!st.compared[size_t(i)]) continue;
        item.scores->kl.push_back(f[r * 3 + 1]);
        item.scores->agree.push_back(f[r * 3 + 2] != 0 ? 1 : 0);
      }
    }
  }
  st.capture->read(back);
}

// The layer states item `item` asked for, from the readback's host copy.
std::map<int, LayerState> CudaBackend::layer_states_of(const Step& st, size_t item, const char* back) const {
  const int kept = st.plan.items[item].kept;
  std::map<int, LayerState> states;
  for (const LayerReadout& lr : st.layer_readouts) {
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
