#pragma once
// The book of a session's KV cache, whatever memory it lives in, written
// once above the backends: its rule, tokens seen, what the last step
// evicted and the bytes booked in the backend's KV account (CacheBook, the
// base of the CPU and CUDA caches, which add only storage); how a cache grows
// and how many tokens a cut keeps (when one is due: EvictionRule::cut_due).
// The cut's own index arithmetic is core/policy/cut_shape.h, which the
// eviction kernel includes.
#include <cstdint>
#include <memory>

#include "core/policy/cut_shape.h"
#include "core/policy/policy.h"
#include "core/runtime/backend.h"
#include "core/runtime/kv_memory_account.h"

namespace h2o {

class CacheBook : public SessionCache {
 public:
  // `account` is shared with the backend and its other caches; the book
  // gives its bytes back when the cache is destroyed.
  CacheBook(const PolicyConfig& policy, int layers, int kv_heads, std::shared_ptr<KvMemoryAccount> account);
  ~CacheBook() override;
  CacheBook(const CacheBook&) = delete;
  CacheBook& operator=(const CacheBook&) = delete;

  const PolicyConfig& policy() const override { return policy_; }
  const EvictionRule& rule() const { return rule_; }
  int64_t tokens_seen() const override { return seen_; }
  int layers() const override { return layers_; }
  int kv_heads() const override { return kv_heads_; }
  const EvictionSummary& last_evictions() const override { return evictions_; }
  int64_t booked_bytes() const { return booked_; }
  // Whether this cache books its bytes in `account` (a backend knows its own caches so).
  bool booked_in(const KvMemoryAccount& account) const { return account_.get() == &account; }

  // Teacher forcing: a session scores its rows against the full cache's rows
  // of the same step. Each forced step marks how many rows its cache stored
  // for that and the tokens seen after it; a reference compares only when it
  // marked the same step and as many rows (one that stopped is behind).
  void mark_forced_rows(int rows, int64_t seen_after) {
    forced_rows_ = rows;
    forced_at_ = seen_after;
  }
  int forced_rows() const { return forced_rows_; }  // of the last forced step marked
  // `reference` when its marked rows are this cache's step's, else null.
  const CacheBook* same_step_reference(const SessionCache* reference) const;

 protected:
  // A fork's book (Backend::fork): the same rule, counts, evictions and forced
  // mark as `other`, in the same account, with `other`'s bytes booked again
  // (CacheCannotGrow, booking nothing, past the account's limit).
  explicit CacheBook(const CacheBook& other, int64_t bytes);
  // Books `bytes` more in the account: CacheCannotGrow, booking nothing, past its limit.
  void book(int64_t bytes);
  void unbook(int64_t bytes);
  // After a step: `rows` more seen, and what left.
  void end_step(int rows, EvictionSummary evictions);

 private:
  PolicyConfig policy_;
  EvictionRule rule_;
  int layers_, kv_heads_;
  int64_t seen_ = 0, booked_ = 0;
  int forced_rows_ = 0;
  int64_t forced_at_ = -1;
  EvictionSummary evictions_;
  std::shared_ptr<KvMemoryAccount> account_;
};

// The most rows any run of a cache under `rule` needs for a step of `rows`
// new tokens: budget + slack + rows when it evicts (the cut runs after the
// step's attention), else the most a head may hold.
int capacity_limit(const EvictionRule& rule, int rows);

// The capacity of a run reserving `capacity` rows that must hold `needed`:
// unchanged when they fit, else grown by half as it fills (`least` rows at
// least) and never past `limit` unless `needed` itself is. So a cache grows
// a logarithmic number of times, and a large budget costs memory only as the
// stream fills it.
int grown_capacity(int capacity, int needed, int limit, int least = 64);

// The rows per (layer, KV head) a cache holding `held` of `capacity` reserves
// to take `rows` more under `rule`.
int grown_capacity(const EvictionRule& rule, int held, int capacity, int rows);

// The cut a (layer, KV head) holding `keys` slots gets at the end of a step
// after which `seen_after` tokens have been seen. Every head of a cache gets
// the same counts: sinks are the first stream positions, never evicted, so
// all of them that were seen are still cached, in the first slots.
CutShape predicted_cut(const EvictionRule& rule, int keys, int64_t seen_after);

}  // namespace h2o
