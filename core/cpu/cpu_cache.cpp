#include "core/cpu/cpu_cache.h"

#include <algorithm>
#include <cstring>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "core/policy/kept_set.h"
#include "core/runtime/cache_book.h"

namespace h2o {

void CpuHeadCache::reserve(int rows, int head_dim, bool rolling) {
  if (rows <= cap) return;
  cap = rows;
  // Exactly `cap` rows: resize() alone may double the capacity, and then
  // allocated_bytes() would understate the memory held.
  const auto grow = [](auto& buffer, size_t n) {
    buffer.reserve(n);
    buffer.resize(n);
  };
  if (!low_bit) {
    grow(k, size_t(cap) * head_dim);
    grow(v, size_t(cap) * head_dim);
    if (rolling) grow(k_raw, size_t(cap) * head_dim);
  }
  grow(pos, size_t(cap));
  grow(score, size_t(cap));
}

CpuHeadCache::CpuHeadCache(const CpuHeadCache& other)
    : n(other.n),
      cap(other.cap),
      k(other.k),
      v(other.v),
      k_raw(other.k_raw),
      pos(other.pos),
      score(other.score),
      low_bit(other.low_bit ? std::make_unique<LowBitHead>(*other.low_bit) : nullptr) {}

CpuCache::CpuCache(const PolicyConfig& policy, const ModelConfig& config, std::shared_ptr<KvMemoryAccount> account)
    : CacheBook(policy, config.n_layers, config.n_kv_heads, std::move(account)),
      head_dim_(config.head_dim()),
      rope_freqs_(config.rope_frequencies()),
      heads_(size_t(config.n_layers) * config.n_kv_heads) {
  if (low_bit()) {
    policy.kv.validate_for(head_dim_);
    for (auto& h : heads_) h.low_bit = std::make_unique<LowBitHead>(policy.kv, head_dim_, rule().sinks, rule().rolling);
  }
}

CpuCache::CpuCache(const CpuCache& other, int64_t bytes)
    : CacheBook(other, bytes),
      logprobs(other.logprobs),
      head_dim_(other.head_dim_),
      rope_freqs_(other.rope_freqs_),
      heads_(other.heads_),
      slot_angles_(other.slot_angles_) {}

std::unique_ptr<CpuCache> CpuCache::fork() const {
  try {
    // The bytes are booked (or refused) before any head is copied.
    return std::unique_ptr<CpuCache>(new CpuCache(*this, booked_bytes()));
  } catch (const std::bad_alloc&) {
    throw CacheCannotGrow("out of memory copying the KV cache");
  }
}

CpuCache::~CpuCache() = default;  // the book gives its bytes back

LayerState CpuCache::read_layer(int layer) const {
  LayerState state;
  state.layer = layer;
  for (int g = 0; g < kv_heads(); ++g) {
    const CpuHeadCache& h = head(layer, g);
    state.positions.emplace_back(h.pos.begin(), h.pos.begin() + h.n);
    state.scores.emplace_back(h.score.begin(), h.score.begin() + h.n);
  }
  return state;
}

int CpuCache::quantized_tokens() const {
  int most = 0;
  if (low_bit())
    for (const auto& h : heads_) most = std::max(most, h.low_bit->quantized());
  return most;
}

int64_t CpuCache::live_bytes() const {
  if (low_bit()) {
    int64_t bytes = 0;
    for (const auto& h : heads_) bytes += h.low_bit->live_bytes();
    return bytes;
  }
  int64_t tokens = 0;
  for (const auto& h : heads_) tokens += h.n;
  return tokens * head_dim_ * 2 * int64_t(sizeof(float));
}

int64_t CpuCache::allocated_bytes() const {
  int64_t bytes = 0;
  for (const auto& h : heads_) {
    bytes += int64_t(h.k.size() + h.v.size() + h.k_raw.size()) * int64_t(sizeof(float));
    if (h.low_bit) bytes += h.low_bit->allocated_bytes();
  }
  return bytes;
}

void CpuCache::reserve_for(int rows) {
  try {
    if (low_bit()) reserve_low_bit(rows);
    else reserve_f32(rows);
  } catch (const std::bad_alloc&) {
    throw CacheCannotGrow("out of memory growing the KV cache");
  }
  if (rule().rolling) {
    int max_cap = 0;
    for (const auto& h : heads_) max_cap = std::max(max_cap, h.cap);
    while (int(slot_angles_.size()) < max_cap) slot_angles_.emplace_back(rope_freqs_, double(slot_angles_.size()));
  }
}

void CpuCache::reserve_f32(int rows) {
  const bool rolling = rule().rolling;
  // Every head's new capacity first, so the account can refuse the growth as a whole.
  std::vector<int> targets(heads_.size());
  int64_t more_rows = 0;
  for (size_t i = 0; i < heads_.size(); ++i) {
    const CpuHeadCache& h = heads_[i];
    targets[i] = grown_capacity(rule(), h.n, h.cap, rows);
    more_rows += targets[i] - h.cap;
  }
  if (more_rows == 0) return;
  const int64_t row_bytes = int64_t(head_dim_) * int64_t(sizeof(float)) * (rolling ? 3 : 2);
  const int64_t booked = more_rows * row_bytes, before = allocated_bytes();
  book(booked);
  try {
    for (size_t i = 0; i < heads_.size(); ++i) heads_[i].reserve(targets[i], head_dim_, rolling);
  } catch (...) {
    // A real allocation failure: the heads that did grow keep their bigger
    // buffers (a later reserve uses them); the account keeps just those bytes.
    unbook(booked - (allocated_bytes() - before));
    throw;
  }
  // Growth frees the old, smaller buffers. glibc keeps such memory in its heap
  // for reuse, so the process would stay as large as its largest moment; give
  // it back now (a growth happens a logarithmic number of times).
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
}

void CpuCache::reserve_low_bit(int rows) {
  const int limit = capacity_limit(rule(), rows);
  std::vector<LowBitHead::Growth> plans(heads_.size());
  int64_t more = 0;
  for (size_t i = 0; i < heads_.size(); ++i) {
    plans[i] = heads_[i].low_bit->plan(rows, limit);
    more += plans[i].bytes - heads_[i].low_bit->allocated_bytes();
  }
  const int64_t before = allocated_bytes();
  if (more > 0) book(more);
  try {
    for (size_t i = 0; i < heads_.size(); ++i) {
      CpuHeadCache& h = heads_[i];
      h.low_bit->grow(plans[i]);
      h.reserve(grown_capacity(h.cap, h.n + rows, limit), head_dim_, rule().rolling);
    }
  } catch (...) {
    // As reserve_f32: the account keeps the bytes of the heads that did grow.
    unbook(std::max<int64_t>(more, 0) - (allocated_bytes() - before));
    throw;
  }
}

void CpuCache::cut(int layer, int kv_head, std::vector<EvictionEvent>& events) {
  CpuHeadCache& h = head(layer, kv_head);
  const std::vector<int> kept =
      select_kept(rule(), std::span<const int32_t>(h.pos.data(), h.n), std::span<const float>(h.score.data(), h.n));
  if (int(kept.size()) != h.n) {
    size_t next_kept = 0;
    for (int slot = 0; slot < h.n; ++slot) {
      if (next_kept < kept.size() && kept[next_kept] == slot) {
        ++next_kept;
      } else {
        events.push_back({layer, kv_head, h.pos[slot]});
      }
    }
    move_rows(h, kept);
    h.n = int(kept.size());
  }
  if (h.low_bit) h.low_bit->flush();
}

// Survivors move towards the front in slot order, so copying forward is
// safe; a run of consecutive survivors moves as one block (a cut usually
// evicts one slot, leaving one run to move).
void CpuCache::move_rows(CpuHeadCache& h, const std::vector<int>& kept) {
  const size_t hd = size_t(head_dim_);
  if (h.low_bit) h.low_bit->cut(kept);
  for (size_t dst = 0; dst < kept.size();) {
    const size_t src = size_t(kept[dst]);
    size_t run = 1;
    while (dst + run < kept.size() && size_t(kept[dst + run]) == src + run) ++run;
    if (src != dst) {
      std::memmove(&h.pos[dst], &h.pos[src], run * sizeof(int32_t));
      std::memmove(&h.score[dst], &h.score[src], run * sizeof(float));
      if (h.low_bit) {
        // Rolling positions (f16 only): each moved key is rotated afresh at its new slot.
        if (rule().rolling)
          for (size_t d = dst; d < dst + run; ++d) h.low_bit->rotate_key(int(d), slot_angles_[d]);
      } else {
        std::memmove(&h.v[dst * hd], &h.v[src * hd], run * hd * sizeof(float));
        if (rule().rolling) {
          // Each key now sits at a new slot: rotate its pre-RoPE copy there,
          // once, so that rounding does not accumulate over many cuts.
          std::memmove(&h.k_raw[dst * hd], &h.k_raw[src * hd], run * hd * sizeof(float));
          for (size_t d = dst; d < dst + run; ++d) {
            std::memcpy(&h.k[d * hd], &h.k_raw[d * hd], hd * sizeof(float));
            rope_rotate(&h.k[d * hd], 1, head_dim_, slot_angles_[d]);
          }
        } else {
          std::memmove(&h.k[dst * hd], &h.k[src * hd], run * hd * sizeof(float));
        }
      }
    }
    dst += run;
  }
}

void CpuCache::end_forward(int rows, std::vector<EvictionEvent>&& events) {
  end_step(rows, EvictionSummary::from_events(std::move(events), layers(), kv_heads()));
}

}  // namespace h2o
