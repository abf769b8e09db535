// The float32 CPU backend: a forward pass you can read top to bottom (after
// llama2.c's run.c), extended to several sessions and several tokens at once.
// The projections run over the rows of every session together, so each weight
// is read once per step; attention runs per session over its own cache.
#include "core/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>

#include "core/base/error.h"
#include "core/base/flush_denormals.h"
#include "core/base/system_limits.h"
#include "core/base/thread_pool.h"
#include "core/cpu/cpu_cache.h"
#include "core/cpu/low_bit_attention.h"
#include "core/cpu/cpu_ops.h"
#include "core/cpu/cpu_weights.h"
#include "core/cpu/head_captures.h"
#include "core/cpu/read_bandwidth.h"
#include "core/model/rope.h"
#include "core/runtime/forward_plan.h"

namespace h2o {
namespace {

struct Layer {
  const float *attn_norm, *ffn_norm;
  cpu::Matrix wq, wk, wv, wo, w1, w2, w3;  // w1 (the gate): SwiGLU only
  const float *bq, *bk, *bv;  // null without attention biases
  const float *bo, *b2, *b3;  // null without output biases
  const float *attn_norm_bias, *ffn_norm_bias;  // null for RMSNorm
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::shared_ptr<const Model> model, int threads, int64_t kv_limit_bytes)
      : model_(std::move(model)),
        cfg_(model_->config),
        threads_(threads > 0 ? threads : hardware_threads()),
        pool_(threads_),
        rope_freqs_(cfg_.rope_frequencies()),
        kv_(std::make_shared<KvMemoryAccount>()) {
    kv_->limit = kv_limit_bytes;
    const ModelWeights& w = model_->weights;
    embedding_ = weights_.matrix(w.token_embedding, /*projected=*/model_->shared_classifier());
    for (const LayerWeights& l : w.layers)
      layers_.push_back({weights_.vector(l.attn_norm), weights_.vector(l.ffn_norm), weights_.matrix(l.wq),
                         weights_.matrix(l.wk), weights_.matrix(l.wv), weights_.matrix(l.wo),
                         l.w1.data ? weights_.matrix(l.w1) : cpu::Matrix{}, weights_.matrix(l.w2),
                         weights_.matrix(l.w3), weights_.vector(l.bq), weights_.vector(l.bk), weights_.vector(l.bv),
                         weights_.vector(l.bo), weights_.vector(l.b2), weights_.vector(l.b3),
                         weights_.vector(l.attn_norm_bias), weights_.vector(l.ffn_norm_bias)});
    final_norm_ = weights_.vector(w.final_norm);
    final_norm_bias_ = weights_.vector(w.final_norm_bias);
    classifier_ = model_->shared_classifier() ? embedding_ : weights_.matrix(w.classifier);
  }

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    std::string out = "cpu, " + model_->weight_types() + " weights, " + std::to_string(threads_) +
                      (threads_ == 1 ? " thread" : " threads");
    if (kv_->limit > 0) out += ", KV limit " + std::to_string(kv_->limit >> 20) + " MiB";
    return out;
  }
  const Model& model() const override { return *model_; }
  int64_t peak_kv_bytes() const override { return kv_->peak; }
  int64_t weight_bytes() const override { return weights_.bytes_read(); }
  double measure_bandwidth(int64_t bytes) override {
    // At most 4 GiB: past the caches, DRAM's rate no longer depends on the size.
    return cpu::measure_read_bandwidth(size_t(std::min<int64_t>(bytes, int64_t(4) << 30)), pool_);
  }

  std::unique_ptr<SessionCache> new_cache(const PolicyConfig& policy) override {
    policy.validate();
    return std::make_unique<CpuCache>(policy, cfg_, kv_);
  }

  std::unique_ptr<SessionCache> fork(const SessionCache& cache) override {
    const auto* own = dynamic_cast<const CpuCache*>(&cache);
    if (!own || !own->booked_in(*kv_)) throw Error("cpu backend: fork: the cache was not made by this backend");
    return own->fork();
  }

  void forward(std::span<ForwardItem> items) override;

 private:
  struct Span {  // where an item's rows sit in the batch
    int first = 0, rows = 0;
  };
  // One forward pass's bookkeeping, from begin_pass to end_pass.
  struct Pass {
    std::vector<CpuCache*> caches;
    std::vector<Span> spans;
    int rows = 0;  // over every item
    std::vector<std::vector<RopeAngles>> stream_angles;      // per item, per row
    std::vector<std::vector<CaptureInProgress>> captures;    // per item
    std::vector<std::vector<EvictionEvent>> events;          // per (item, KV head), merged at the end
  };
  // Checks the items, makes room in their caches, sizes the scratch and embeds the rows.
  Pass begin_pass(std::span<ForwardItem> items);
  // One layer over every row: projections, each session's attention by KV head, the MLP.
  void layer(int l, Pass& pass);
  // The final norm, logits, each cache's cut and each item's outputs.
  void end_pass(std::span<ForwardItem> items, Pass& pass);
  void begin_captures(const ForwardItem& item, const CpuCache& cache, const Span& span,
                      std::vector<CaptureInProgress>& captures) const;
  // One session, one layer, one KV head: append_rows, attend (scores and
  // captures from each row's weights), trim the captures, cut.
  void attention(CpuCache& cache, const Span& span, const std::vector<RopeAngles>& stream_angles, int layer,
                 int kv_head, const std::vector<CaptureInProgress>& captures, std::vector<EvictionEvent>& events);
  // The step's keys (rotated at `angles`) and values into the head's cache.
  void append_rows(const CpuCache& cache, CpuHeadCache& h, const Span& span, std::span<const RopeAngles* const> angles,
                   int kv_head);
  // Every query head of the group over the head's keys, causal within the
  // step (the first `before` keys were held before it): the outputs into
  // att_out_, and each row's weights to `take(query head, row, weights)`.
  using TakeRow = std::function<void(int, int, const float*)>;
  void attend(CpuHeadCache& h, const Span& span, int before, std::span<const RopeAngles* const> angles, int kv_head,
              const TakeRow& take);
  // The logits every item asks for, in one pass over the classifier: row k
  // of logits_ is the k-th classified row; returns each item's logit row per
  // batch row (-1: not classified).
  std::vector<std::vector<int>> classify(std::span<ForwardItem> items, const std::vector<Span>& spans);
  void finish(ForwardItem& item, CpuCache& cache, const Span& span, const std::vector<int>& logit_row);
  // out = the model's norm of T rows of x: RMSNorm, or LayerNorm with `bias`.
  void norm(float* out, const float* x, const float* weight, const float* bias, int T) const;
  // The residual after the attention output (in xb_): one block after the
  // other, or both blocks from the same x (parallel residual).
  void add_blocks(const Layer& w, int T);
  // The feed-forward block of T rows, from the normed rows in xb_ to its output in xb_.
  void feed_forward(const Layer& w, int T);

  std::shared_ptr<const Model> model_;
  const ModelConfig& cfg_;
  int threads_;
  ThreadPool pool_;
  cpu::Weights weights_;
  cpu::Matrix embedding_;
  std::vector<Layer> layers_;
  const float* final_norm_ = nullptr;
  const float* final_norm_bias_ = nullptr;  // LayerNorm only
  cpu::Matrix classifier_;
  std::vector<double> rope_freqs_;  // per rotated pair
  std::shared_ptr<KvMemoryAccount> kv_;  // shared with every cache made here

  // Activations of the current batch (T rows), the rows being classified and their logits.
  std::vector<float> x_, xb_, q_, k_, v_, att_out_, hb_, hb2_, rows_, logits_;
  std::vector<float> attn_proj_;  // parallel residual: the attention block's output while the MLP runs
  cpu::ProjectScratch acts_;  // activations as the typed kernels read them
};

void CpuBackend::forward(std::span<ForwardItem> items) {
  const FlushDenormals fast_floats;  // this thread's part of the work; the pool's workers do the same
  Pass pass = begin_pass(items);
  for (int l = 0; l < cfg_.n_layers; ++l) layer(l, pass);
  end_pass(items, pass);
}

CpuBackend::Pass CpuBackend::begin_pass(std::span<ForwardItem> items) {
  // Checks, then room in every cache, before anything changes.
  Pass p;
  p.caches = checked_caches<CpuCache>(items, {"cpu backend", cfg_.vocab_size, cfg_.n_layers, cfg_.n_heads});
  reserve_rows(items, p.caches);
  p.spans.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    p.spans[i] = {p.rows, int(items[i].tokens.size())};
    p.rows += p.spans[i].rows;
  }
  const size_t T = size_t(p.rows), dim = size_t(cfg_.dim), q_dim = size_t(cfg_.n_heads * cfg_.head_dim());
  x_.resize(T * dim);
  xb_.resize(T * dim);
  q_.resize(T * q_dim);
  k_.resize(T * size_t(cfg_.kv_dim()));
  v_.resize(T * size_t(cfg_.kv_dim()));
  att_out_.resize(T * q_dim);
  hb_.resize(T * size_t(cfg_.hidden_dim));
  hb2_.resize(T * size_t(cfg_.hidden_dim));

  // Embed every new token.
  for (size_t i = 0; i < items.size(); ++i)
    for (int r = 0; r < p.spans[i].rows; ++r)
      cpu::row_to_f32(embedding_, items[i].tokens[size_t(r)], &x_[size_t(p.spans[i].first + r) * dim]);

  // RoPE angles at the new rows' stream positions (used unless rolling), and
  // the shapes of the captures asked for, set before the parallel part fills them.
  p.stream_angles.resize(items.size());
  p.captures.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!p.caches[i]->rule().rolling)
      for (int r = 0; r < p.spans[i].rows; ++r)
        p.stream_angles[i].emplace_back(rope_freqs_, double(p.caches[i]->tokens_seen() + r));
    begin_captures(items[i], *p.caches[i], p.spans[i], p.captures[i]);
  }
  p.events.resize(items.size() * size_t(cfg_.n_kv_heads));
  return p;
}

void CpuBackend::layer(int l, Pass& p) {
  const Layer& w = layers_[size_t(l)];
  const int T = p.rows, q_dim = cfg_.n_heads * cfg_.head_dim(), kv_dim = cfg_.kv_dim();
  // Attention block: norm, Q/K/V projections of every row at once.
  norm(xb_.data(), x_.data(), w.attn_norm, w.attn_norm_bias, T);
  const cpu::Product qkv[] = {{q_.data(), &w.wq}, {k_.data(), &w.wk}, {v_.data(), &w.wv}};
  cpu::project(qkv, xb_.data(), T, pool_, acts_);
  if (w.bq) {  // Qwen2's and GPT-NeoX's projection biases
    cpu::add_bias(q_.data(), w.bq, T, q_dim);
    cpu::add_bias(k_.data(), w.bk, T, kv_dim);
    cpu::add_bias(v_.data(), w.bv, T, kv_dim);
  }

  // Per session and KV head: RoPE, append, attend, score, cut.
  const int tasks = int(p.caches.size()) * cfg_.n_kv_heads;
  size_t work = 0;  // multiply-adds of this layer's attention
  for (size_t i = 0; i < p.caches.size(); ++i)
    work += size_t(p.spans[i].rows) * size_t(p.caches[i]->head(l, 0).n + p.spans[i].rows) * size_t(q_dim) * 2;
  auto heads = [&](int begin, int end) {
    for (int task = begin; task < end; ++task) {
      const size_t i = size_t(task / cfg_.n_kv_heads);
      const int g = task % cfg_.n_kv_heads;
      attention(*p.caches[i], p.spans[i], p.stream_angles[i], l, g, p.captures[i], p.events[size_t(task)]);
    }
  };
  if (work >= cpu::kParallelMinWork) pool_.parallel_for(tasks, 1, heads);
  else heads(0, tasks);

  // Output projection, then the feed-forward block and the residuals.
  cpu::project(xb_.data(), att_out_.data(), T, w.wo, pool_, acts_);
  if (w.bo) cpu::add_bias(xb_.data(), w.bo, T, cfg_.dim);
  add_blocks(w, T);
}

void CpuBackend::end_pass(std::span<ForwardItem> items, Pass& p) {
  // Final norm, every item's logits in one pass over the classifier, then
  // each item's bookkeeping and outputs. Forced-mode reference rows are
  // stored by every item first, then scored.
  norm(x_.data(), x_.data(), final_norm_, final_norm_bias_, p.rows);
  const std::vector<std::vector<int>> logit_rows = classify(items, p.spans);
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<EvictionEvent> merged;
    for (int g = 0; g < cfg_.n_kv_heads; ++g) {
      auto& e = p.events[i * size_t(cfg_.n_kv_heads) + size_t(g)];
      merged.insert(merged.end(), e.begin(), e.end());
    }
    p.caches[i]->end_forward(p.spans[i].rows, std::move(merged));
    finish(items[i], *p.caches[i], p.spans[i], logit_rows[i]);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& item = items[i];
    if (!item.forced || !item.scores) continue;
    *item.scores = {};
    const auto* reference = static_cast<const CpuCache*>(p.caches[i]->same_step_reference(item.forced->reference));
    score_forced_rows(p.caches[i]->logprobs, reference ? std::span<const double>(reference->logprobs) : std::span<const double>(),
                      cfg_.vocab_size, item.forced->next, *item.scores);
  }
}

void CpuBackend::norm(float* out, const float* x, const float* weight, const float* bias, int T) const {
  if (cfg_.norm == NormKind::Layer) cpu::layernorm(out, x, weight, bias, T, cfg_.dim, cfg_.norm_eps);
  else cpu::rmsnorm(out, x, weight, T, cfg_.dim, cfg_.norm_eps);
}

void CpuBackend::add_blocks(const Layer& w, int T) {
  if (!cfg_.parallel_residual) {
    for (size_t j = 0; j < x_.size(); ++j) x_[j] += xb_[j];
    norm(xb_.data(), x_.data(), w.ffn_norm, w.ffn_norm_bias, T);
    feed_forward(w, T);
    for (size_t j = 0; j < x_.size(); ++j) x_[j] += xb_[j];
    return;
  }
  // x + attn(norm1(x)) + mlp(norm2(x)): the MLP reads the x the attention
  // block read, so the attention output waits aside (a swap, no copy).
  attn_proj_.swap(xb_);
  xb_.resize(x_.size());
  norm(xb_.data(), x_.data(), w.ffn_norm, w.ffn_norm_bias, T);
  feed_forward(w, T);
  // Summed as llama.cpp and Hugging Face do: (mlp + attn) + x.
  for (size_t j = 0; j < x_.size(); ++j) x_[j] += xb_[j] + attn_proj_[j];
}

void CpuBackend::feed_forward(const Layer& w, int T) {
  const size_t n = size_t(T) * cfg_.hidden_dim;
  if (cfg_.ffn == FfnKind::SwiGlu) {
    const cpu::Product gate_up[] = {{hb_.data(), &w.w1}, {hb2_.data(), &w.w3}};
    cpu::project(gate_up, xb_.data(), T, pool_, acts_);
    for (size_t j = 0; j < n; ++j) {
      const float g = hb_[j];
      hb_[j] = g / (1.0f + std::exp(-g)) * hb2_[j];
    }
  } else {  // GELU MLP: up + b3, GELU
    cpu::project(hb_.data(), xb_.data(), T, w.w3, pool_, acts_);
    if (w.b3) cpu::add_bias(hb_.data(), w.b3, T, cfg_.hidden_dim);
    cpu::gelu(hb_.data(), n);
  }
  cpu::project(xb_.data(), hb_.data(), T, w.w2, pool_, acts_);
  if (w.b2) cpu::add_bias(xb_.data(), w.b2, T, cfg_.dim);
}

std::vector<std::vector<int>> CpuBackend::classify(std::span<ForwardItem> items, const std::vector<Span>& spans) {
  // The rows each item asks logits of (LogitNeeds), gathered into one block
  // so that the classifier (often the largest matrix) is read once for every session.
  const int dim = cfg_.dim, vocab = cfg_.vocab_size;
  std::vector<std::vector<int>> logit_row(items.size());
  std::vector<int> batch_rows;
  for (size_t i = 0; i < items.size(); ++i) {
    const LogitNeeds needs = logit_needs(items[i]);
    const int rows = spans[i].rows;
    logit_row[i].assign(size_t(rows), -1);
    for (int r = 0; r < rows; ++r)
      if (needs.classified(rows, r)) {
        logit_row[i][size_t(r)] = int(batch_rows.size());
        batch_rows.push_back(spans[i].first + r);
      }
  }
  const int total = int(batch_rows.size());
  if (total == 0) return logit_row;
  rows_.resize(size_t(total) * dim);
  for (int k = 0; k < total; ++k)
    std::memcpy(&rows_[size_t(k) * dim], &x_[size_t(batch_rows[size_t(k)]) * dim], size_t(dim) * sizeof(float));
  logits_.resize(size_t(total) * vocab);
  cpu::project(logits_.data(), rows_.data(), total, classifier_, pool_, acts_);
  return logit_row;
}

// What one item asked for beyond its cache update, from its classified rows
// (logit_row: each batch row's place among them; consecutive rows classified
// together are consecutive there).
void CpuBackend::finish(ForwardItem& item, CpuCache& cache, const Span& span, const std::vector<int>& logit_row) {
  const int vocab = cfg_.vocab_size;
  const auto row = [&](int r) { return &logits_[size_t(logit_row[size_t(r)]) * vocab]; };
  if (item.logits) {
    const int n = item.all_logits ? span.rows : 1, first = span.rows - n;
    item.logits->assign(row(first), row(first) + size_t(n) * vocab);
  }
  if (item.choose && item.chosen)
    *item.chosen = choose_token(std::span<const float>(row(span.rows - 1), size_t(vocab)), *item.choose);
  if (item.forced) {
    const int k = int(std::min<size_t>(item.forced->next.size(), size_t(span.rows)));
    cache.logprobs.clear();
    if (k > 0) log_softmax_rows(row(0), k, vocab, cache.logprobs);
    cache.mark_forced_rows(k, cache.tokens_seen());
  }
  if (item.capture && item.layer_states) {
    item.layer_states->clear();
    for (int layer : item.capture->layer_states) item.layer_states->push_back(cache.read_layer(layer));
  }
}

// Shapes the item's attention captures (each task then fills its own KV head).
void CpuBackend::begin_captures(const ForwardItem& item, const CpuCache& cache, const Span& span,
                                std::vector<CaptureInProgress>& captures) const {
  if (!item.capture || !item.captured) return;
  item.captured->assign(item.capture->attention.size(), {});
  for (size_t c = 0; c < item.capture->attention.size(); ++c) {
    const CaptureRequest& req = item.capture->attention[c];  // checked by check_item
    AttentionCapture& out = (*item.captured)[c];
    out.layer = req.layer;
    out.head = req.head;
    out.rows = std::min(std::max(req.rows, 1), span.rows);
    for (int r = span.rows - out.rows; r < span.rows; ++r)
      out.query_positions.push_back(int32_t(cache.tokens_seen() + r));
    const int heads = AttentionCapture::captured_heads(req.head, cfg_.n_heads, cfg_.n_kv_heads);
    out.key_positions.assign(size_t(cfg_.n_kv_heads), {});
    out.probs.assign(size_t(heads), {});
    out.top_share.assign(size_t(heads), NAN);
    captures.push_back({&req, &out});
  }
}

void CpuBackend::attention(CpuCache& cache, const Span& span, const std::vector<RopeAngles>& stream_angles, int layer,
                           int g, const std::vector<CaptureInProgress>& captures, std::vector<EvictionEvent>& events) {
  const EvictionRule& rule = cache.rule();
  CpuHeadCache& h = cache.head(layer, g);
  const int before = h.n, rows = span.rows, n = before + rows;
  // Angles of the new rows: at their stream positions, or at their slots under rolling.
  std::vector<const RopeAngles*> angles(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r)
    angles[size_t(r)] = rule.rolling ? &cache.slot_angles(before + r) : &stream_angles[size_t(r)];
  append_rows(cache, h, span, angles, g);

  // Each score keeps what its rule carries over (score_rule.h); the new rows enter at 0.
  const ScoreRule& score = rule.score;
  if (score.carry != 1.0f)
    for (int j = 0; j < before; ++j) h.score[size_t(j)] = score.carried(h.score[size_t(j)]);
  HeadCaptures captured(captures, cfg_, layer, g, rows, n);
  // A query row's weights, once computed: its scores and captures, in the
  // (query head, row) order every backend sums them in.
  attend(h, span, before, angles, g, [&](int qh, int r, const float* a) {
    const int visible = before + r + 1;
    if (score.row_adds(r, rows))
      for (int j = 0; j < visible; ++j) h.score[size_t(j)] += a[j];
    captured.add(qh, r, a, visible);
  });
  captured.trim(std::span<const int32_t>(h.pos.data(), size_t(n)));
  cache.cut(layer, g, events);
}

void CpuBackend::append_rows(const CpuCache& cache, CpuHeadCache& h, const Span& span,
                             std::span<const RopeAngles* const> angles, int g) {
  const int hd = cfg_.head_dim(), kv_dim = cfg_.kv_dim(), before = h.n;
  const bool rolling = cache.rule().rolling;
  for (int r = 0; r < span.rows; ++r) {
    const size_t row = size_t(span.first + r);
    const int slot = before + r;
    const float* new_k = &k_[row * kv_dim + size_t(g) * hd];
    const float* new_v = &v_[row * kv_dim + size_t(g) * hd];
    h.pos[size_t(slot)] = int32_t(cache.tokens_seen() + r);
    h.score[size_t(slot)] = 0.0f;
    if (h.low_bit) {
      std::vector<float> rotated(new_k, new_k + hd);
      rope_rotate(rotated.data(), 1, hd, *angles[size_t(r)]);
      h.low_bit->append(rotated.data(), new_k, new_v, h.pos[size_t(slot)]);
      continue;
    }
    float* k = &h.k[size_t(slot) * hd];
    std::memcpy(k, new_k, hd * sizeof(float));
    if (rolling) std::memcpy(&h.k_raw[size_t(slot) * hd], k, hd * sizeof(float));
    rope_rotate(k, 1, hd, *angles[size_t(r)]);
    std::memcpy(&h.v[size_t(slot) * hd], new_v, hd * sizeof(float));
  }
  h.n = before + span.rows;
}

void CpuBackend::attend(CpuHeadCache& h, const Span& span, int before, std::span<const RopeAngles* const> angles, int g,
                        const TakeRow& take) {
  const int hd = cfg_.head_dim(), q_dim = cfg_.n_heads * hd, group = cfg_.group_size();
  const int rows = span.rows, n = before + rows;
  const float scale = 1.0f / std::sqrt(float(hd));
  const auto query = [&](int qh, int r) { return &q_[size_t(span.first + r) * q_dim + size_t(qh) * hd]; };
  const auto output = [&](int qh, int r) { return &att_out_[size_t(span.first + r) * q_dim + size_t(qh) * hd]; };
  for (int qh = g * group; qh < (g + 1) * group; ++qh)
    for (int r = 0; r < rows; ++r) rope_rotate(query(qh, r), 1, hd, *angles[size_t(r)]);

  if (h.low_bit) {
    // Codes are read back a tile at a time for every query row together.
    // Kept per thread: a buffer this size, freed each call, would be mapped afresh (page faults) every time.
    thread_local std::vector<float> att;
    att.resize(std::max(att.size(), size_t(group) * rows * n));
    const auto att_row = [&](int qh, int r) { return &att[(size_t(qh - g * group) * rows + r) * n]; };
    std::vector<cpu::QueryRow> queries;
    for (int qh = g * group; qh < (g + 1) * group; ++qh)
      for (int r = 0; r < rows; ++r) queries.push_back({query(qh, r), att_row(qh, r), output(qh, r), before + r + 1});
    cpu::low_bit_attention(*h.low_bit, hd, scale, queries);
    for (int qh = g * group; qh < (g + 1) * group; ++qh)
      for (int r = 0; r < rows; ++r) take(qh, r, att_row(qh, r));
    return;
  }
  std::vector<float> att(static_cast<size_t>(n));
  for (int qh = g * group; qh < (g + 1) * group; ++qh)
    for (int r = 0; r < rows; ++r) {
      const int visible = before + r + 1;  // causal within the chunk
      cpu::dot_rows(att.data(), query(qh, r), h.k.data(), visible, hd);
      for (int j = 0; j < visible; ++j) att[size_t(j)] *= scale;
      cpu::softmax(att.data(), visible);
      cpu::weighted_rows(output(qh, r), att.data(), h.v.data(), visible, hd);
      take(qh, r, att.data());
    }
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const Model> model, int threads, int64_t kv_limit_bytes) {
  return std::make_unique<CpuBackend>(std::move(model), threads, kv_limit_bytes);
}

}  // namespace h2o
