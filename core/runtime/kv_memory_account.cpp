#include "core/runtime/kv_memory_account.h"

#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/system_limits.h"

namespace h2o {

void KvMemoryAccount::grow(int64_t bytes) {
  if (limit > 0 && allocated + bytes > limit)
    throw CacheCannotGrow("out of KV memory: " + format_mib(allocated, 1) + " held, " + format_mib(bytes, 1) +
                " more needed, limit " + format_mib(limit, 1));
  allocated += bytes;
  peak = std::max(peak, allocated);
}

int64_t kv_cache_bytes(const ModelConfig& config, int64_t tokens, bool rolling) {
  const int64_t heads = int64_t(config.n_layers) * config.n_kv_heads;
  const int64_t row = int64_t(config.head_dim()) * int64_t(sizeof(float)) * (rolling ? 3 : 2) + 8;
  return tokens * heads * row;
}

void check_kv_fits_memory(const ModelConfig& config, int64_t bytes, int caches, const std::string& flag,
                          const std::string& what) {
  const int64_t memory = physical_memory_bytes();
  if (bytes <= memory) return;
  fail(flag, what + " (" + std::to_string(caches) + (caches == 1 ? " cache, " : " caches, ") + std::to_string(config.n_layers) +
                 " layers x " + std::to_string(config.n_kv_heads) + " KV heads) need " + format_mib(bytes, 0) +
                 " of KV memory, more than this machine's " + format_mib(memory, 0));
}

void check_budgets_fit_memory(const ModelConfig& config, const std::vector<PolicyConfig>& policies) {
  int64_t bytes = 0;
  int bounded = 0, largest = 0;
  for (const PolicyConfig& p : policies) {
    if (!p.evicts()) continue;
    bytes += kv_cache_bytes(config, int64_t(p.budget()) + p.slack, p.rolling);
    ++bounded;
    largest = std::max(largest, p.budget() + p.slack);
  }
  check_kv_fits_memory(config, bytes, bounded, "--budget", "caches of up to " + std::to_string(largest) + " tokens per KV head");
}

}  // namespace h2o
