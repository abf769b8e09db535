#pragma once
// The CPU backend's KV cache of one session: per (layer, KV head), keys and
// values of the cached tokens in slot order, their stream positions and
// scores. A cut compacts the survivors to the front, so the memory a policy
// keeps is the memory it uses.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cpu/low_bit_head.h"
#include "core/model/model.h"
#include "core/model/rope.h"
#include "core/runtime/cache_book.h"

namespace h2o {

struct CpuHeadCache {
  int n = 0;    // tokens held
  int cap = 0;  // rows reserved
  std::vector<float> k;      // [cap][head_dim], rotated to its position
  std::vector<float> v;      // [cap][head_dim]
  std::vector<float> k_raw;  // [cap][head_dim] before RoPE; rolling positions only
  std::vector<int32_t> pos;  // [cap] stream positions
  std::vector<float> score;  // [cap] each slot's score, as the rule's ScoreRule sums it
  // At a reduced KV precision, the keys and values live here instead of k, v, k_raw.
  std::unique_ptr<LowBitHead> low_bit;

  void reserve(int rows, int head_dim, bool rolling);  // pos and score alone with low_bit

  CpuHeadCache() = default;
  CpuHeadCache(CpuHeadCache&&) = default;
  CpuHeadCache& operator=(CpuHeadCache&&) = default;
  // A fork's copy: every buffer at the same capacity, the low-bit runs too.
  CpuHeadCache(const CpuHeadCache& other);
};

class CpuCache final : public CacheBook {
 public:
  // `account` (shared with the backend and its other caches) books every
  // byte this cache reserves, and gets them back when the cache is destroyed.
  // Without one, the cache has an account of its own with no limit.
  CpuCache(const PolicyConfig& policy, const ModelConfig& config,
           std::shared_ptr<KvMemoryAccount> account = std::make_shared<KvMemoryAccount>());
  ~CpuCache() override;
  CpuCache(const CpuCache&) = delete;
  CpuCache& operator=(const CpuCache&) = delete;
  // Backend::fork: a copy of every head, booked in the same account
  // (CacheCannotGrow past its limit or out of memory, booking nothing).
  std::unique_ptr<CpuCache> fork() const;

  int size(int layer, int kv_head) const override { return head(layer, kv_head).n; }
  LayerState read_layer(int layer) const override;
  int64_t live_bytes() const override;
  int quantized_tokens() const override;
  int64_t allocated_bytes() const override;

  // Used by the CPU backend during a forward pass.
  CpuHeadCache& head(int layer, int kv_head) { return heads_[size_t(layer) * kv_heads() + kv_head]; }
  const CpuHeadCache& head(int layer, int kv_head) const { return heads_[size_t(layer) * kv_heads() + kv_head]; }
  bool low_bit() const { return !policy().kv.native(); }
  // Makes room for `rows` more tokens in every head, as every cache grows
  // (core/runtime/cache_book.h). Throws CacheCannotGrow, having changed
  // nothing, when the account's limit forbids it or memory runs out.
  void reserve_for(int rows);
  // Applies the rule to one head after attention: compacts survivors and,
  // under rolling positions, re-rotates the keys whose slot changed; at a
  // quantized precision, then flushes the residual's full groups.
  void cut(int layer, int kv_head, std::vector<EvictionEvent>& events);
  void end_forward(int rows, std::vector<EvictionEvent>&& events);
  // Rolling positions: the angles of slot s (valid for every slot reserved).
  const RopeAngles& slot_angles(int slot) const { return slot_angles_[size_t(slot)]; }

  // Teacher forcing: the log-probabilities of the last forward's scored rows,
  // kept for the sessions that compare with this one in the same step (CacheBook::mark_forced_rows).
  std::vector<double> logprobs;

 private:
  int head_dim_;
  std::vector<double> rope_freqs_;
  std::vector<CpuHeadCache> heads_;
  std::vector<RopeAngles> slot_angles_;  // rolling positions: angles of each slot

  CpuCache(const CpuCache& other, int64_t bytes);
  void reserve_f32(int rows);
  void reserve_low_bit(int rows);
  void move_rows(CpuHeadCache& h, const std::vector<int>& kept);
};

}  // namespace h2o
