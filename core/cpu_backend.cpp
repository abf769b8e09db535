// The float32 CPU backend: a forward pass you can read top to bottom (after
// llama2.c's run.c), extended to several sessions and several tokens at once.
// The projections run over the rows of every session together, so each weight
// is read once per step; attention runs per session over its own cache.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "backend.h"
#include "cpu_cache.h"
#include "cpu_ops.h"
#include "error.h"
#include "flush_denormals.h"
#include "rope.h"

namespace h2o {
namespace {

// A weight as float32: the file's own memory when it is float32, else a copy.
class F32Weights {
 public:
  const float* get(const Tensor& t) {
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
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::shared_ptr<const Model> model, int threads, int64_t kv_limit_bytes)
      : model_(std::move(model)),
        cfg_(model_->config),
        threads_(threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(threads_),
        kv_(std::make_shared<KvMemoryAccount>()) {
    kv_->limit = kv_limit_bytes;
    const ModelWeights& w = model_->weights;
    embedding_ = weights_.get(w.token_embedding);
    for (const LayerWeights& l : w.layers)
      layers_.push_back({weights_.get(l.attn_norm), weights_.get(l.wq), weights_.get(l.wk), weights_.get(l.wv),
                         weights_.get(l.wo), weights_.get(l.ffn_norm), weights_.get(l.w1), weights_.get(l.w2),
                         weights_.get(l.w3)});
    final_norm_ = weights_.get(w.final_norm);
    classifier_ = model_->shared_classifier() ? embedding_ : weights_.get(w.classifier);
  }

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    std::string out = "cpu f32, " + std::to_string(threads_) + " threads";
    if (kv_->limit > 0) out += ", KV limit " + std::to_string(kv_->limit >> 20) + " MiB";
    return out;
  }
  const Model& model() const override { return *model_; }
  int64_t peak_kv_bytes() const override { return kv_->peak; }

  std::unique_ptr<SessionCache> new_cache(const PolicyConfig& policy) override {
    policy.validate();
    return std::make_unique<CpuCache>(policy, cfg_, kv_);
  }

  void forward(std::span<ForwardItem> items) override;

 private:
  struct Span {  // where an item's rows sit in the batch
    int first = 0, rows = 0;
  };
  void attention(const ForwardItem& item, CpuCache& cache, const Span& span,
                 const std::vector<RopeAngles>& stream_angles, int layer, int kv_head,
                 std::vector<EvictionEvent>& events);

  std::shared_ptr<const Model> model_;
  const ModelConfig& cfg_;
  int threads_;
  ThreadPool pool_;
  F32Weights weights_;
  const float* embedding_ = nullptr;
  std::vector<Layer> layers_;
  const float* final_norm_ = nullptr;
  const float* classifier_ = nullptr;
  std::shared_ptr<KvMemoryAccount> kv_;  // shared with every cache made here

  // Activations of the current batch (T rows).
  std::vector<float> x_, xb_, q_, k_, v_, att_out_, hb_, hb2_;
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
    cache->begin_forward();
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

  for (size_t i = 0; i < items.size(); ++i)
    for (int r = 0; r < spans[i].rows; ++r) {
      const int tok = items[i].tokens[r];
      if (tok < 0 || tok >= cfg_.vocab_size)
        throw Error("token id " + std::to_string(tok) + " is outside the model's vocabulary (" +
                    std::to_string(cfg_.vocab_size) + ")");
      std::memcpy(&x_[size_t(spans[i].first + r) * dim], embedding_ + size_t(tok) * dim, dim * sizeof(float));
    }

  // RoPE angles at the new rows' stream positions (used unless rolling), and
  // the shape of any attention capture, set before the parallel part fills it.
  std::vector<std::vector<RopeAngles>> stream_angles(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!caches[i]->policy().rolling)
      for (int r = 0; r < spans[i].rows; ++r)
        stream_angles[i].emplace_back(hd, double(caches[i]->tokens_seen() + r), cfg_.rope_theta);
    if (AttentionCapture* cap = items[i].capture; cap && items[i].capture_layer >= 0) {
      cap->layer = items[i].capture_layer;
      cap->rows = std::min(items[i].capture_rows, spans[i].rows);
      cap->query_positions.clear();
      for (int r = spans[i].rows - cap->rows; r < spans[i].rows; ++r)
        cap->query_positions.push_back(int32_t(caches[i]->tokens_seen() + r));
      cap->key_positions.assign(cfg_.n_kv_heads, {});
      cap->probs.assign(cfg_.n_heads, {});
    }
  }

  // One event list per (item, kv head) task, merged after the pass.
  std::vector<std::vector<EvictionEvent>> events(items.size() * cfg_.n_kv_heads);

  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& w = layers_[l];
    cpu::rmsnorm(xb_.data(), x_.data(), w.attn_norm, T, dim, cfg_.norm_eps);
    cpu::matmul(q_.data(), xb_.data(), w.wq, T, dim, q_dim, pool_);
    cpu::matmul(k_.data(), xb_.data(), w.wk, T, dim, kv_dim, pool_);
    cpu::matmul(v_.data(), xb_.data(), w.wv, T, dim, kv_dim, pool_);

    const int tasks = int(items.size()) * cfg_.n_kv_heads;
    size_t work = 0;  // multiply-adds of this layer's attention
    for (size_t i = 0; i < items.size(); ++i)
      work += size_t(spans[i].rows) * (caches[i]->head(l, 0).n + spans[i].rows) * q_dim * 2;
    auto heads = [&](int begin, int end) {
      for (int task = begin; task < end; ++task) {
        const int i = task / cfg_.n_kv_heads, g = task % cfg_.n_kv_heads;
        attention(items[i], *caches[i], spans[i], stream_angles[i], l, g, events[task]);
      }
    };
    if (work >= cpu::kParallelMinWork)
      pool_.parallel_for(tasks, 1, heads);
    else
      heads(0, tasks);

    cpu::matmul(xb_.data(), att_out_.data(), w.wo, T, q_dim, dim, pool_);
    for (size_t j = 0; j < x_.size(); ++j) x_[j] += xb_[j];

    cpu::rmsnorm(xb_.data(), x_.data(), w.ffn_norm, T, dim, cfg_.norm_eps);
    cpu::matmul(hb_.data(), xb_.data(), w.w1, T, dim, hidden, pool_);
    cpu::matmul(hb2_.data(), xb_.data(), w.w3, T, dim, hidden, pool_);
    for (size_t j = 0; j < size_t(T) * hidden; ++j) {
      const float g = hb_[j];
      hb_[j] = g / (1.0f + std::exp(-g)) * hb2_[j];  // SwiGLU
    }
    cpu::matmul(xb_.data(), hb_.data(), w.w2, T, hidden, dim, pool_);
    for (size_t j = 0; j < x_.size(); ++j) x_[j] += xb_[j];
  }

  cpu::rmsnorm(x_.data(), x_.data(), final_norm_, T, dim, cfg_.norm_eps);
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& item = items[i];
    std::vector<EvictionEvent> merged;
    for (int g = 0; g < cfg_.n_kv_heads; ++g) {
      auto& e = events[i * cfg_.n_kv_heads + g];
      merged.insert(merged.end(), e.begin(), e.end());
    }
    std::sort(merged.begin(), merged.end(), [](const EvictionEvent& a, const EvictionEvent& b) {
      return std::tie(a.layer, a.kv_head, a.position) < std::tie(b.layer, b.kv_head, b.position);
    });
    caches[i]->end_forward(spans[i].rows, std::move(merged));
    if (!item.logits) continue;
    const int rows = item.all_logits ? spans[i].rows : 1;
    const int first = spans[i].first + spans[i].rows - rows;
    item.logits->resize(size_t(rows) * cfg_.vocab_size);
    cpu::matmul(item.logits->data(), &x_[size_t(first) * dim], classifier_, rows, dim, cfg_.vocab_size, pool_);
  }
}

// One session, one layer, one KV head: rotate and append the new keys, attend
// from every query head of the group, accumulate scores, then cut.
void CpuBackend::attention(const ForwardItem& item, CpuCache& cache, const Span& span,
                           const std::vector<RopeAngles>& stream_angles, int layer, int g,
                           std::vector<EvictionEvent>& events) {
  const int hd = cfg_.head_dim(), q_dim = cfg_.n_heads * hd, kv_dim = cfg_.kv_dim(), group = cfg_.group_size();
  const bool rolling = cache.policy().rolling;
  CpuHeadCache& h = cache.head(layer, g);
  const int before = h.n, rows = span.rows, n = before + rows;
  const float scale = 1.0f / std::sqrt(float(hd));

  // Angles of the new rows: at their stream positions, or at their slots under rolling.
  std::vector<const RopeAngles*> angles(rows);
  for (int r = 0; r < rows; ++r) angles[r] = rolling ? &cache.slot_angles(before + r) : &stream_angles[r];

  for (int r = 0; r < rows; ++r) {
    const size_t row = size_t(span.first + r);
    const int slot = before + r;
    float* k = &h.k[size_t(slot) * hd];
    std::memcpy(k, &k_[row * kv_dim + size_t(g) * hd], hd * sizeof(float));
    if (rolling) std::memcpy(&h.k_raw[size_t(slot) * hd], k, hd * sizeof(float));
    rope_rotate(k, 1, hd, *angles[r]);
    std::memcpy(&h.v[size_t(slot) * hd], &v_[row * kv_dim + size_t(g) * hd], hd * sizeof(float));
    h.pos[slot] = int32_t(cache.tokens_seen() + r);
    h.score[slot] = 0.0f;
  }
  h.n = n;

  AttentionCapture* cap = item.capture_layer == layer ? item.capture : nullptr;
  const int cap_rows = cap ? std::min(item.capture_rows, rows) : 0;
  if (cap) {
    // Each task fills only its own KV head and query heads.
    cap->key_positions[g].assign(h.pos.begin(), h.pos.begin() + n);
    for (int qh = g * group; qh < (g + 1) * group; ++qh) cap->probs[qh].assign(size_t(cap_rows) * n, 0.0f);
  }

  std::vector<float> att(n);
  for (int qh = g * group; qh < (g + 1) * group; ++qh) {
    for (int r = 0; r < rows; ++r) {
      const size_t row = size_t(span.first + r);
      float* q = &q_[row * q_dim + size_t(qh) * hd];
      rope_rotate(q, 1, hd, *angles[r]);
      const int visible = before + r + 1;  // causal within the chunk
      for (int j = 0; j < visible; ++j) att[j] = cpu::dot(q, &h.k[size_t(j) * hd], hd) * scale;
      cpu::softmax(att.data(), visible);
      float* out = &att_out_[row * q_dim + size_t(qh) * hd];
      std::fill(out, out + hd, 0.0f);
      for (int j = 0; j < visible; ++j) {
        cpu::axpy(out, &h.v[size_t(j) * hd], att[j], hd);
        h.score[j] += att[j];
      }
      if (cap && r >= rows - cap_rows) {
        auto& p = cap->probs[qh];
        float* dst = &p[size_t(r - (rows - cap_rows)) * n];
        std::copy(att.begin(), att.begin() + visible, dst);
      }
    }
  }

  cache.cut(layer, g, events);
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const Model> model, int threads, int64_t kv_limit_bytes) {
  return std::make_unique<CpuBackend>(std::move(model), threads, kv_limit_bytes);
}

}  // namespace h2o
