// The float32 CPU backend: a forward pass you can read top to bottom (after
// llama2.c's run.c), extended to several sessions and several tokens at once.
// The projections run over the rows of every session together, so each weight
// is read once per step; attention runs per session over its own cache.
#include "core/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/base/error.h"
#include "core/base/flush_denormals.h"
#include "core/base/thread_pool.h"
#include "core/cpu/cpu_cache.h"
#include "core/cpu/cpu_ops.h"
#include "core/cpu/read_bandwidth.h"
#include "core/model/rope.h"

namespace h2o {
namespace {

// A weight as float32: the file's own memory when it is float32, else a copy.
class F32Weights {
 public:
  const float* get(const Tensor& t) {
    if (!t.data) return nullptr;
    if (t.dtype == DType::F32) return t.f32();
    auto& buf = converted_.emplace_back(size_t(t.numel()));
    convert_to_f32(t.data, t.dtype, size_t(t.numel()), buf.data());
    return buf.data();
  }

 private:
  std::vector<std::vector<float>> converted_;
};

struct Layer {
  const float *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *w1, *w2, *w3;
  const float *bq, *bk, *bv;  // null without attention biases
};

// One attention capture being filled: the untrimmed rows of each captured
// head, trimmed into `out` by the task that owns its KV head.
struct CaptureInProgress {
  const CaptureRequest* request = nullptr;
  AttentionCapture* out = nullptr;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::shared_ptr<const Model> model, int threads, int64_t kv_limit_bytes)
      : model_(std::move(model)),
        cfg_(model_->config),
        threads_(threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(threads_),
        rope_freqs_(cfg_.rope_frequencies()),
        kv_(std::make_shared<KvMemoryAccount>()) {
    kv_->limit = kv_limit_bytes;
    const ModelWeights& w = model_->weights;
    embedding_ = weights_.get(w.token_embedding);
    for (const LayerWeights& l : w.layers)
      layers_.push_back({weights_.get(l.attn_norm), weights_.get(l.wq), weights_.get(l.wk), weights_.get(l.wv),
                         weights_.get(l.wo), weights_.get(l.ffn_norm), weights_.get(l.w1), weights_.get(l.w2),
                         weights_.get(l.w3), weights_.get(l.bq), weights_.get(l.bk), weights_.get(l.bv)});
    final_norm_ = weights_.get(w.final_norm);
    classifier_ = model_->shared_classifier() ? embedding_ : weights_.get(w.classifier);
    for (const Tensor* t : model_->all_tensors()) f32_bytes_ += t->numel() * int64_t(sizeof(float));
  }

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    std::string out = "cpu f32, " + std::to_string(threads_) + " threads";
    if (kv_->limit > 0) out += ", KV limit " + std::to_string(kv_->limit >> 20) + " MiB";
    return out;
  }
  const Model& model() const override { return *model_; }
  int64_t peak_kv_bytes() const override { return kv_->peak; }
  int64_t weight_bytes() const override { return f32_bytes_; }
  double measure_bandwidth(int64_t bytes) override {
    // At most 4 GiB: past the caches, DRAM's rate no longer depends on the size.
    return cpu::measure_read_bandwidth(size_t(std::min<int64_t>(bytes, int64_t(4) << 30)), pool_);
  }

  std::unique_ptr<SessionCache> new_cache(const PolicyConfig& policy) override {
    policy.validate();
    return std::make_unique<CpuCache>(policy, cfg_, kv_);
  }

  void forward(std::span<ForwardItem> items) override;

 private:
  struct Span {  // where an item's rows sit in the batch
    int first = 0, rows = 0;
  };
  void begin_captures(const ForwardItem& item, const CpuCache& cache, const Span& span,
                      std::vector<CaptureInProgress>& captures) const;
  void attention(CpuCache& cache, const Span& span, const std::vector<RopeAngles>& stream_angles, int layer,
                 int kv_head, const std::vector<CaptureInProgress>& captures, std::vector<EvictionEvent>& events);
  // The logits of rows [first, first + rows) of the batch.
  void classify(int first, int rows, std::vector<float>& out);
  void finish(ForwardItem& item, CpuCache& cache, const Span& span);

  std::shared_ptr<const Model> model_;
  const ModelConfig& cfg_;
  int threads_;
  ThreadPool pool_;
  F32Weights weights_;
  const float* embedding_ = nullptr;
  std::vector<Layer> layers_;
  const float* final_norm_ = nullptr;
  const float* classifier_ = nullptr;
  std::vector<double> rope_freqs_;  // per rotated pair
  int64_t f32_bytes_ = 0;           // every weight, as this backend reads it
  std::shared_ptr<KvMemoryAccount> kv_;  // shared with every cache made here

  // Activations of the current batch (T rows), and logits being scored.
  std::vector<float> x_, xb_, q_, k_, v_, att_out_, hb_, hb2_, logits_;
};

void CpuBackend::forward(std::span<ForwardItem> items) {
  const FlushDenormals fast_floats;  // this thread's part of the work; the pool's workers do the same
  const int dim = cfg_.dim, hd = cfg_.head_dim(), q_dim = cfg_.n_heads * hd, kv_dim = cfg_.kv_dim();
  const int hidden = cfg_.hidden_dim;

  std::vector<Span> spans(items.size());
  std::vector<CpuCache*> caches(items.size());
  int total = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    auto* cache = dynamic_cast<CpuCache*>(items[i].cache);
    if (!cache) throw Error("cpu backend: a session cache from another backend was passed to forward()");
    if (items[i].tokens.empty()) throw Error("cpu backend: forward() with no tokens");
    caches[i] = cache;
    spans[i] = {total, int(items[i].tokens.size())};
    total += spans[i].rows;
    try {
      cache->reserve_for(spans[i].rows);
    } catch (const std::bad_alloc&) {
      throw SessionFailure(i, "out of memory growing the KV cache");
    } catch (const Error& e) {
      throw SessionFailure(i, e.what());
    }
  }
  const int T = total;
  x_.resize(size_t(T) * dim);
  xb_.resize(size_t(T) * dim);
  q_.resize(size_t(T) * q_dim);
  k_.resize(size_t(T) * kv_dim);
  v_.resize(size_t(T) * kv_dim);
  att_out_.resize(size_t(T) * q_dim);
  hb_.resize(size_t(T) * hidden);
  hb2_.resize(size_t(T) * hidden);

  // Embed every new token.
  for (size_t i = 0; i < items.size(); ++i)
    for (int r = 0; r < spans[i].rows; ++r) {
      const int tok = items[i].tokens[size_t(r)];
      if (tok < 0 || tok >= cfg_.vocab_size)
        throw Error("token id " + std::to_string(tok) + " is outside the model's vocabulary (" +
                    std::to_string(cfg_.vocab_size) + ")");
      std::memcpy(&x_[size_t(spans[i].first + r) * dim], embedding_ + size_t(tok) * dim, dim * sizeof(float));
    }

  // RoPE angles at the new rows' stream positions (used unless rolling), and
  // the shapes of the captures asked for, set before the parallel part fills them.
  std::vector<std::vector<RopeAngles>> stream_angles(items.size());
  std::vector<std::vector<CaptureInProgress>> captures(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!caches[i]->rule().rolling)
      for (int r = 0; r < spans[i].rows; ++r)
        stream_angles[i].emplace_back(rope_freqs_, double(caches[i]->tokens_seen() + r));
    begin_captures(items[i], *caches[i], spans[i], captures[i]);
  }

  // One event list per (item, KV head) task, merged after the pass.
  std::vector<std::vector<EvictionEvent>> events(items.size() * size_t(cfg_.n_kv_heads));

  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& w = layers_[size_t(l)];
    // Attention block: norm, Q/K/V projections of every row at once.
    cpu::rmsnorm(xb_.data(), x_.data(), w.attn_norm, T, dim, cfg_.norm_eps);
    cpu::matmul(q_.data(), xb_.data(), w.wq, T, dim, q_dim, pool_);
    cpu::matmul(k_.data(), xb_.data(), w.wk, T, dim, kv_dim, pool_);
    cpu::matmul(v_.data(), xb_.data(), w.wv, T, dim, kv_dim, pool_);
    if (w.bq) {  // Qwen2's projection biases
      cpu::add_bias(q_.data(), w.bq, T, q_dim);
      cpu::add_bias(k_.data(), w.bk, T, kv_dim);
      cpu::add_bias(v_.data(), w.bv, T, kv_dim);
    }

    // Per session and KV head: RoPE, append, attend, score, cut.
    const int tasks = int(items.size()) * cfg_.n_kv_heads;
    size_t work = 0;  // multiply-adds of this layer's attention
    for (size_t i = 0; i < items.size(); ++i)
      work += size_t(spans[i].rows) * size_t(caches[i]->head(l, 0).n + spans[i].rows) * size_t(q_dim) * 2;
    auto heads = [&](int begin, int end) {
      for (int task = begin; task < end; ++task) {
        const size_t i = size_t(task / cfg_.n_kv_heads);
        const int g = task % cfg_.n_kv_heads;
        attention(*caches[i], spans[i], stream_angles[i], l, g, captures[i], events[size_t(task)]);
      }
    };
    if (work >= cpu::kParallelMinWork) pool_.parallel_for(tasks, 1, heads);
    else heads(0, tasks);

    // Output projection and residual.
    cpu::matmul(xb_.data(), att_out_.data(), w.wo, T, q_dim, dim, pool_);
    for (size_t j = 0; j < x_.size(); ++j) x_[j] += xb_[j];

    // Feed-forward block: norm, SwiGLU, down projection and residual.
    cpu::rmsnorm(xb_.data(), x_.data(), w.ffn_norm, T, dim, cfg_.norm_eps);
    cpu::matmul(hb_.data(), xb_.data(), w.w1, T, dim, hidden, pool_);
    cpu::matmul(hb2_.data(), xb_.data(), w.w3, T, dim, hidden, pool_);
    for (size_t j = 0; j < size_t(T) * hidden; ++j) {
      const float g = hb_[j];
      hb_[j] = g / (1.0f + std::exp(-g)) * hb2_[j];
    }
    cpu::matmul(xb_.data(), hb_.data(), w.w2, T, hidden, dim, pool_);
    for (size_t j = 0; j < x_.size(); ++j) x_[j] += xb_[j];
  }

  // Final norm; then each item's bookkeeping and outputs. Forced-mode
  // reference rows are stored by every item first, then scored.
  cpu::rmsnorm(x_.data(), x_.data(), final_norm_, T, dim, cfg_.norm_eps);
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<EvictionEvent> merged;
    for (int g = 0; g < cfg_.n_kv_heads; ++g) {
      auto& e = events[i * size_t(cfg_.n_kv_heads) + size_t(g)];
      merged.insert(merged.end(), e.begin(), e.end());
    }
    caches[i]->end_forward(spans[i].rows, std::move(merged));
    finish(items[i], *caches[i], spans[i]);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& item = items[i];
    if (!item.forced || !item.scores) continue;
    *item.scores = {};
    const auto* reference = dynamic_cast<const CpuCache*>(item.forced->reference);
    // Only rows of this same step compare: a reference that stopped is behind.
    const bool compare = reference && reference->logprobs_at == caches[i]->tokens_seen() &&
                         reference->logprobs.size() == caches[i]->logprobs.size();
    score_forced_rows(caches[i]->logprobs, compare ? std::span<const double>(reference->logprobs) : std::span<const double>(),
                      cfg_.vocab_size, item.forced->next, *item.scores);
  }
}

void CpuBackend::classify(int first, int rows, std::vector<float>& out) {
  out.resize(size_t(rows) * cfg_.vocab_size);
  cpu::matmul(out.data(), &x_[size_t(first) * cfg_.dim], classifier_, rows, cfg_.dim, cfg_.vocab_size, pool_);
}

// What one item asked for beyond its cache update.
void CpuBackend::finish(ForwardItem& item, CpuCache& cache, const Span& span) {
  const int last = span.first + span.rows - 1;
  if (item.logits) {
    const int rows = item.all_logits ? span.rows : 1;
    classify(span.first + span.rows - rows, rows, *item.logits);
  }
  if (item.choose && item.chosen) {
    classify(last, 1, logits_);
    *item.chosen = choose_token(logits_, *item.choose);
  }
  if (item.forced) {
    const int rows = int(std::min<size_t>(item.forced->next.size(), size_t(span.rows)));
    cache.logprobs.clear();
    if (rows > 0) {
      classify(span.first, rows, logits_);
      log_softmax_rows(logits_.data(), rows, cfg_.vocab_size, cache.logprobs);
    }
    cache.logprobs_at = cache.tokens_seen();
  }
  if (item.capture && item.layer_states) {
    item.layer_states->clear();
    for (int layer : item.capture->layer_states) {
      if (layer < 0 || layer >= cfg_.n_layers) throw Error("capture: layer " + std::to_string(layer) + " does not exist");
      item.layer_states->push_back(cache.read_layer(layer));
    }
  }
}

// Shapes the item's attention captures (each task then fills its own KV head).
void CpuBackend::begin_captures(const ForwardItem& item, const CpuCache& cache, const Span& span,
                                std::vector<CaptureInProgress>& captures) const {
  if (!item.capture || !item.captured) return;
  item.captured->assign(item.capture->attention.size(), {});
  for (size_t c = 0; c < item.capture->attention.size(); ++c) {
    const CaptureRequest& req = item.capture->attention[c];
    if (req.layer < 0 || req.layer >= cfg_.n_layers)
      throw Error("capture: layer " + std::to_string(req.layer) + " does not exist");
    if (req.head < kAllHeads || req.head >= cfg_.n_heads)
      throw Error("capture: head " + std::to_string(req.head) + " does not exist");
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

// One session, one layer, one KV head: rotate and append the new keys, attend
// from every query head of the group, update scores, then cut.
void CpuBackend::attention(CpuCache& cache, const Span& span, const std::vector<RopeAngles>& stream_angles, int layer,
                           int g, const std::vector<CaptureInProgress>& captures, std::vector<EvictionEvent>& events) {
  const int hd = cfg_.head_dim(), q_dim = cfg_.n_heads * hd, kv_dim = cfg_.kv_dim(), group = cfg_.group_size();
  const EvictionRule& rule = cache.rule();
  const bool rolling = rule.rolling;
  CpuHeadCache& h = cache.head(layer, g);
  const int before = h.n, rows = span.rows, n = before + rows;
  const float scale = 1.0f / std::sqrt(float(hd));

  // Angles of the new rows: at their stream positions, or at their slots under rolling.
  std::vector<const RopeAngles*> angles(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) angles[size_t(r)] = rolling ? &cache.slot_angles(before + r) : &stream_angles[size_t(r)];

  for (int r = 0; r < rows; ++r) {
    const size_t row = size_t(span.first + r);
    const int slot = before + r;
    float* k = &h.k[size_t(slot) * hd];
    std::memcpy(k, &k_[row * kv_dim + size_t(g) * hd], hd * sizeof(float));
    if (rolling) std::memcpy(&h.k_raw[size_t(slot) * hd], k, hd * sizeof(float));
    rope_rotate(k, 1, hd, *angles[size_t(r)]);
    std::memcpy(&h.v[size_t(slot) * hd], &v_[row * kv_dim + size_t(g) * hd], hd * sizeof(float));
    h.pos[size_t(slot)] = int32_t(cache.tokens_seen() + r);
    h.score[size_t(slot)] = 0.0f;
  }
  h.n = n;
  // TOVA's scores are the current step's alone; every other rule accumulates.
  const bool current_only = rule.score == ScoreKind::Current;
  if (current_only) std::fill(h.score.begin(), h.score.begin() + n, 0.0f);

  // Captures of this layer: untrimmed rows of the heads this task owns.
  struct Owned {
    const CaptureInProgress* capture;
    int first_row;                         // the first captured row of the step
    std::vector<std::vector<float>> rows;  // per captured head of this KV head: rows x n
  };
  std::vector<Owned> owned;
  for (const CaptureInProgress& c : captures)
    if (c.request->layer == layer) {
      const int heads = AttentionCapture::captured_heads(c.request->head, cfg_.n_heads, cfg_.n_kv_heads);
      Owned o{&c, rows - c.out->rows, std::vector<std::vector<float>>(size_t(heads))};
      for (int ch = 0; ch < heads; ++ch)
        if (AttentionCapture::kv_head_of(c.request->head, ch, cfg_.n_heads, cfg_.n_kv_heads) == g)
          o.rows[size_t(ch)].assign(size_t(c.out->rows) * n, 0.0f);
      owned.push_back(std::move(o));
    }

  std::vector<float> att(static_cast<size_t>(n));
  for (int qh = g * group; qh < (g + 1) * group; ++qh) {
    for (int r = 0; r < rows; ++r) {
      const size_t row = size_t(span.first + r);
      float* q = &q_[row * q_dim + size_t(qh) * hd];
      rope_rotate(q, 1, hd, *angles[size_t(r)]);
      const int visible = before + r + 1;  // causal within the chunk
      for (int j = 0; j < visible; ++j) att[size_t(j)] = cpu::dot(q, &h.k[size_t(j) * hd], hd) * scale;
      cpu::softmax(att.data(), visible);
      float* out = &att_out_[row * q_dim + size_t(qh) * hd];
      std::fill(out, out + hd, 0.0f);
      const bool scores_row = !current_only || r == rows - 1;
      for (int j = 0; j < visible; ++j) {
        cpu::axpy(out, &h.v[size_t(j) * hd], att[size_t(j)], hd);
        if (scores_row) h.score[size_t(j)] += att[size_t(j)];
      }
      for (Owned& o : owned) {
        if (r < o.first_row) continue;
        const int sel = o.capture->request->head;
        if (sel >= 0 && sel != qh) continue;
        const size_t ch = size_t(sel == kAllHeads ? qh : sel == kGroupMean ? g : 0);
        float* dst = &o.rows[ch][size_t(r - o.first_row) * n];
        const float weight = sel == kGroupMean ? 1.0f / float(group) : 1.0f;
        for (int j = 0; j < visible; ++j) dst[j] += weight * att[size_t(j)];
      }
    }
  }

  // Trim what was captured to the asked-for keys and measure its top-k share.
  for (Owned& o : owned) {
    AttentionCapture& out = *o.capture->out;
    const CaptureRequest& req = *o.capture->request;
    const std::vector<int> slots = kept_key_slots(n, req.max_keys, req.keep_first);
    for (int s : slots) out.key_positions[size_t(g)].push_back(h.pos[size_t(s)]);
    for (size_t ch = 0; ch < o.rows.size(); ++ch) {
      if (o.rows[ch].empty()) continue;
      std::vector<float>& probs = out.probs[ch];
      double share = 0;
      int shared_rows = 0;
      for (int r = 0; r < out.rows; ++r) {
        const std::span<const float> full(&o.rows[ch][size_t(r) * n], size_t(n));
        if (req.top_k > 0) add_top_k_share(full, req.top_k, share, shared_rows);
        for (int s : slots) probs.push_back(full[size_t(s)]);
      }
      if (req.top_k > 0) out.top_share[ch] = shared_rows ? float(share / shared_rows) : NAN;
    }
  }

  cache.cut(layer, g, events);
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const Model> model, int threads, int64_t kv_limit_bytes) {
  return std::make_unique<CpuBackend>(std::move(model), threads, kv_limit_bytes);
}

}  // namespace h2o
