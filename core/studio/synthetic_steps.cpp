#include "core/studio/synthetic_steps.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/policy/kept_set.h"
#include "core/studio/studio_setup.h"

namespace h2o {

namespace {

constexpr int kEndOfSequence = 2;

// A well-mixed 64-bit value of four integers (splitmix64's finaliser over a running sum).
uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
  x ^= (c + 0x8cb92ba72f3d8dd7ull) * 0x94d049bb133111ebull;
  x += d * 0xd6e8feb86659fd93ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float unit(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return float(mix(a, b, c, d) >> 40) / float(1 << 24); }

// How strongly a (layer, KV head) attends to a position for its own sake: one
// position in 32 is a heavy hitter of that head (weight 1 to 2), the rest faint.
float salience(uint64_t seed, int layer, int kv, int64_t position) {
  const float u = unit(seed, uint64_t(layer), uint64_t(kv), uint64_t(position));
  constexpr float kHeavy = 31.0f / 32.0f;
  return u >= kHeavy ? 1.0f + 32.0f * (u - kHeavy) : 0.02f * u;
}

// The attention sinks: the first tokens take much of every row.
float sink_weight(int64_t position) { return position < 4 ? 6.0f / float(1 + position) : 0.0f; }

// The recency diagonal: the latest tokens, fading over a few dozen.
float recency(int64_t distance) { return distance < 64 ? 3.0f * std::exp(-float(distance) / 6.0f) : 0.0f; }

// The cut's score of a token `age` steps old (1: entered this step) of
// salience `base`: summed as the rule sums a steady attention (score_rule.h);
// a score that forgets also varies from step to step and favours the latest
// tokens, as one step's attention does.
float steady_score(const ScoreRule& rule, float base, int64_t age, uint64_t seed, int64_t step, size_t head,
                   int32_t position) {
  if (rule.accumulates()) return base * rule.steady_weight(age);
  const float varied = base * (0.5f + unit(seed, uint64_t(step), head, uint64_t(position)));
  return varied * rule.steady_weight(age) + recency(age - 1);
}

constexpr std::array<const char*, 16> kWords = {" the", " of",    " and",  " a",   " model", " cache", " is", " to",
                                                 " in",  " token", " that", " we",  ",",      ".",      " it", " on"};
std::string word(int token) { return kWords[size_t(token) % kWords.size()]; }

}  // namespace

struct SyntheticStepSource::Pane {
  int session = 0;
  PolicyConfig policy;
  EvictionRule rule;
  bool per_head = false;                   // cuts by score: every (layer, KV head) keeps its own tokens
  std::vector<std::vector<int32_t>> held;  // per (layer, KV head) when per_head, else one list for all
  int last_token = -1;                     // the answer token sampled last step, fed next
  int64_t generated = 0;
  int kv_heads = 1;
  const std::vector<int32_t>& head(int layer, int kv) const {
    return per_head ? held[size_t(layer) * size_t(kv_heads) + size_t(kv)] : held.front();
  }
};

double synthetic_step_ms(const std::string& shape, int panes) {
  // docs/CUDA.md: the H200's decode steps, one pane and four batched.
  if (shape == "llama2-7b") return panes > 1 ? 7.21 : 4.73;
  if (shape == "tinyllama-1.1b") return panes > 1 ? 2.68 : 1.81;
  if (shape == "stories15M") return 0.388;
  return 1.0;
}

SyntheticStepsSpec synthetic_steps_spec(const std::string& shape, const std::vector<std::string>& policies, int budget,
                                        int slack) {
  StudioConfig config;
  config.policies = policies;
  config.budget = budget;
  config.slack = slack;
  SyntheticStepsSpec spec;
  spec.shape = shape;
  spec.policies = studio_policies(config);
  spec.step_ms = synthetic_step_ms(shape, int(policies.size()));
  return spec;
}

SyntheticStepSource::SyntheticStepSource(SyntheticStepsSpec spec, const StudioCaptureSchedule& schedule)
    : spec_(std::move(spec)), shape_(synthetic_shape(spec_.shape)), schedule_(schedule) {
  for (size_t i = 0; i < spec_.policies.size(); ++i) {
    auto pane = std::make_unique<Pane>();
    pane->session = int(i);
    pane->policy = spec_.policies[i];
    pane->rule = pane->policy.rule();
    pane->per_head = pane->rule.evicts() && pane->rule.by_score > 0;
    pane->kv_heads = shape_.n_kv_heads;
    pane->held.resize(pane->per_head ? size_t(shape_.n_layers) * size_t(shape_.n_kv_heads) : 1);
    panes_.push_back(std::move(pane));
  }
}

SyntheticStepSource::~SyntheticStepSource() = default;

RecordingHeader SyntheticStepSource::header() const {
  RecordingHeader h;
  h.manifest = {{"source", "synthetic"}, {"shape", spec_.shape}, {"seed", spec_.seed}};
  h.mode = "stream";
  h.title = "synthetic:" + spec_.shape + " (synthetic steps)";
  h.layers = shape_.n_layers;
  h.heads = shape_.n_heads;
  h.kv_heads = shape_.n_kv_heads;
  h.policies = spec_.policies;
  h.context = shape_.max_seq_len;
  h.view_layer = schedule_.layer();
  h.view_head = -1;
  return h;
}

void SyntheticStepSource::start_turn() {
  ++turn_index_;
  turn_.prompt = 24 + int(mix(spec_.seed, 1, uint64_t(turn_index_), 0) % 96);
  turn_.answer = 96 + int(mix(spec_.seed, 2, uint64_t(turn_index_), 0) % 256);
  answer_left_ = turn_.answer;
}

std::optional<StepRecord> SyntheticStepSource::next() {
  StepRecord record;
  record.step = step_;
  const bool prefill = answer_left_ == 0;
  if (prefill) start_turn();
  record.phase = prefill ? Phase::Prefill : Phase::Decode;
  record.prompt_index = turn_index_;
  record.turn_start = prefill;
  --answer_left_;  // the prefill step samples the answer's first token
  record.turn_end = answer_left_ == 0;
  const int fed = prefill ? turn_.prompt : 1;
  for (auto& pane : panes_) record.sessions.push_back(session_step(*pane, record, fed));
  seen_ += fed;
  ++step_;
  record.engine_seconds = double(step_) * spec_.step_ms / 1000.0;
  return record;
}

SessionRecord SyntheticStepSource::session_step(Pane& pane, const StepRecord& record, int fed_count) {
  SessionRecord s;
  s.session = pane.session;
  s.position = seen_;
  for (int i = 0; i < fed_count; ++i) {
    const int token = record.phase == Phase::Prefill
                          ? int(mix(spec_.seed, 3, uint64_t(turn_index_), uint64_t(i)) % uint64_t(shape_.vocab_size))
                          : pane.last_token;
    s.fed.push_back(token);
    s.fed_text.push_back(word(token));
  }
  for (auto& list : pane.held)
    for (int i = 0; i < fed_count; ++i) list.push_back(int32_t(seen_ + i));
  const int64_t now = seen_ + fed_count - 1;  // the step's last query position

  // Captured before the cut, as a backend reads them out.
  const int64_t held_watched = int64_t(pane.head(schedule_.layer(), 0).size()) * shape_.n_kv_heads;
  const CapturePlan plan = schedule_.plan_for(record.step, shape_.n_layers, shape_.n_heads, held_watched);
  for (const CaptureRequest& request : plan.attention) s.attention.push_back(capture(pane, request, now));

  // The cut: each cache by its rule and the scores below, as every backend cuts.
  std::vector<EvictionEvent> events;
  std::vector<float> scores;
  for (size_t h = 0; h < pane.held.size(); ++h) {
    std::vector<int32_t>& list = pane.held[h];
    if (!pane.rule.cut_due(int(list.size()))) continue;
    const int layer = int(h) / pane.kv_heads, kv = int(h) % pane.kv_heads;
    scores.resize(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const float base = salience(spec_.seed, layer, kv, list[i]);
      scores[i] = steady_score(pane.rule.score, base, now - list[i] + 1, spec_.seed, record.step, h, list[i]);
    }
    const std::vector<int> kept = select_kept(pane.rule, list, scores);
    std::vector<int32_t> survivors;
    survivors.reserve(kept.size());
    size_t k = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      if (k < kept.size() && size_t(kept[k]) == i) {
        survivors.push_back(list[i]);
        ++k;
      } else if (pane.per_head) {
        events.push_back({layer, kv, list[i]});
      } else {
        s.evictions.everywhere.push_back(list[i]);
      }
    }
    list = std::move(survivors);
  }
  if (!events.empty())
    s.evictions = EvictionSummary::from_events(std::move(events), shape_.n_layers, shape_.n_kv_heads);
  for (int layer : plan.layer_states) s.layer_states.push_back(layer_state(pane, layer, now));

  // The step's token and the pane's numbers.
  const bool eos = record.turn_end;
  s.token = eos ? kEndOfSequence : int(mix(spec_.seed, 4 + uint64_t(pane.session), uint64_t(record.step), 0) %
                                       uint64_t(shape_.vocab_size));
  s.text = eos ? "</s>" : word(s.token);
  s.eos = eos;
  pane.last_token = s.token;
  pane.generated += 1;
  int cached = 0;
  int64_t tokens = 0;
  for (const auto& list : pane.held) {
    cached = std::max(cached, int(list.size()));
    tokens += int64_t(list.size());
  }
  if (!pane.per_head) tokens *= int64_t(shape_.n_layers) * shape_.n_kv_heads;
  s.cached_tokens = cached;
  const int64_t row_bytes = 2 * 2 * int64_t(shape_.dim / shape_.n_heads);  // f16 key and value
  s.live_bytes = tokens * row_bytes;
  s.allocated_bytes = int64_t(std::max(cached, pane.rule.evicts() ? pane.rule.budget + pane.rule.slack + 1 : cached)) *
                      shape_.n_layers * shape_.n_kv_heads * row_bytes;
  s.step_ms = spec_.step_ms;
  s.decode_tokens_per_s = 1000.0 / spec_.step_ms;
  if (record.phase == Phase::Prefill) s.prefill_tokens_per_s = 1000.0 * fed_count / spec_.step_ms;
  return s;
}

AttentionCapture SyntheticStepSource::capture(const Pane& pane, const CaptureRequest& request, int64_t query) const {
  AttentionCapture a;
  a.layer = request.layer;
  a.head = request.head;
  a.rows = 1;
  a.query_positions = {int32_t(query)};
  const int heads = shape_.n_heads, kv_heads = shape_.n_kv_heads;
  a.key_positions.resize(size_t(kv_heads));
  for (int kv = 0; kv < kv_heads; ++kv) {
    // kept_key_slots' choice (the first keep_first and the latest rest), without listing every slot of a long cache.
    const std::vector<int32_t>& list = pane.head(request.layer, kv);
    std::vector<int32_t>& keys = a.key_positions[size_t(kv)];
    const size_t n = list.size(), max_keys = size_t(request.max_keys);
    if (request.max_keys <= 0 || n <= max_keys) {
      keys = list;
    } else {
      const size_t first = std::min(size_t(std::max(request.keep_first, 0)), max_keys);
      keys.assign(list.begin(), list.begin() + long(first));
      keys.insert(keys.end(), list.end() - long(max_keys - first), list.end());
    }
  }
  const int captured = AttentionCapture::captured_heads(request.head, heads, kv_heads);
  a.probs.resize(size_t(captured));
  std::vector<float> sorted;
  for (int c = 0; c < captured; ++c) {
    const int kv = AttentionCapture::kv_head_of(request.head, c, heads, kv_heads);
    const std::vector<int32_t>& keys = a.key_positions[size_t(kv)];
    std::vector<float>& row = a.probs[size_t(c)];
    row.resize(keys.size());
    float sum = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      const int64_t p = keys[i];
      const float own = salience(spec_.seed, request.layer, kv, p) *
                        (0.5f + unit(spec_.seed, uint64_t(request.layer) * 4096 + uint64_t(c), uint64_t(p), 7));
      row[i] = sink_weight(p) + own + recency(query - p);
      sum += row[i];
    }
    // The keys not captured hold the faint rest of the row's mass.
    const float rest = 0.01f * float(pane.head(request.layer, kv).size() - keys.size());
    const float total = sum + rest;
    for (float& w : row) w /= total;
    if (request.top_k > 0) {
      sorted = row;
      const size_t k = std::min(sorted.size(), size_t(request.top_k));
      std::partial_sort(sorted.begin(), sorted.begin() + long(k), sorted.end(), std::greater<>());
      float top = 0;
      for (size_t i = 0; i < k; ++i) top += sorted[i];
      a.top_share.push_back(top);
    }
  }
  return a;
}

LayerState SyntheticStepSource::layer_state(const Pane& pane, int layer, int64_t now) const {
  LayerState state;
  state.layer = layer;
  for (int kv = 0; kv < shape_.n_kv_heads; ++kv) {
    const std::vector<int32_t>& list = pane.head(layer, kv);
    state.positions.push_back(list);
    std::vector<float>& scores = state.scores.emplace_back(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const float attention = sink_weight(list[i]) + salience(spec_.seed, layer, kv, list[i]);
      scores[i] = attention * pane.rule.score.steady_weight(now - list[i] + 1);
    }
  }
  return state;
}

}  // namespace h2o
