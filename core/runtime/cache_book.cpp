#include "core/runtime/cache_book.h"

#include <algorithm>

namespace h2o {

CacheBook::CacheBook(const PolicyConfig& policy, int layers, int kv_heads, std::shared_ptr<KvMemoryAccount> account)
    : policy_(policy), rule_(policy.rule()), layers_(layers), kv_heads_(kv_heads), account_(std::move(account)) {}

CacheBook::CacheBook(const CacheBook& other, int64_t bytes)
    : policy_(other.policy_),
      rule_(other.rule_),
      layers_(other.layers_),
      kv_heads_(other.kv_heads_),
      seen_(other.seen_),
      forced_rows_(other.forced_rows_),
      forced_at_(other.forced_at_),
      evictions_(other.evictions_),
      account_(other.account_) {
  book(bytes);
}

CacheBook::~CacheBook() { account_->release(booked_); }

void CacheBook::book(int64_t bytes) {
  account_->grow(bytes);
  booked_ += bytes;
}

void CacheBook::unbook(int64_t bytes) {
  account_->release(bytes);
  booked_ -= bytes;
}

const CacheBook* CacheBook::same_step_reference(const SessionCache* reference) const {
  const auto* book = dynamic_cast<const CacheBook*>(reference);
  return book && forced_at_ >= 0 && book->forced_at_ == forced_at_ && book->forced_rows_ == forced_rows_ ? book : nullptr;
}

void CacheBook::end_step(int rows, EvictionSummary evictions) {
  seen_ += rows;
  evictions_ = std::move(evictions);
}

int capacity_limit(const EvictionRule& rule, int rows) {
  return rule.evicts() ? rule.budget + rule.slack + rows : kMaxCacheTokens;
}

int grown_capacity(int capacity, int needed, int limit, int least) {
  if (needed <= capacity) return capacity;
  const int grown = std::max({needed, capacity + capacity / 2, least});
  return std::max(needed, std::min(grown, limit));
}

int grown_capacity(const EvictionRule& rule, int held, int capacity, int rows) {
  return grown_capacity(capacity, held + rows, capacity_limit(rule, rows));
}

CutShape predicted_cut(const EvictionRule& rule, int keys, int64_t seen_after) {
  const int sinks_present = int(std::min<int64_t>(rule.sinks, seen_after));
  return cut_shape(keys, sinks_present, rule.recent, rule.by_score);
}

}  // namespace h2o
