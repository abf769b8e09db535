#pragma once
// The KV memory of all the caches one backend made: what they hold now, the
// most they ever held together, and the limit (0: none) past which a cache
// may not grow, as a device's memory would stop it.
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/model/model.h"
#include "core/policy/policy.h"

namespace h2o {

// Why a cache could not grow (past the account's limit, or out of host or
// device memory): its session stops alone (forward_plan.h: reserve_rows).
// Any other failure of a step is an Error of the whole step.
class CacheCannotGrow : public Error {
 public:
  using Error::Error;
};

struct KvMemoryAccount {
  int64_t allocated = 0, peak = 0, limit = 0;
  // Books `bytes` more; throws CacheCannotGrow("out of KV memory: ...") and books nothing past the limit.
  void grow(int64_t bytes);
  void release(int64_t bytes) { allocated -= bytes; }
};

// Bytes one session's cache holds at `tokens` per (layer, KV head): f32 K and
// V (and the pre-RoPE keys under rolling positions), positions and scores.
int64_t kv_cache_bytes(const ModelConfig& config, int64_t tokens, bool rolling);

// Throws Error naming `flag` when `bytes` of KV caches (`caches` of them, `what`
// they are: "caches of up to 4096 tokens per KV head", "a context of 2000000000
// tokens") exceed this machine's memory — said before any cache is filled.
void check_kv_fits_memory(const ModelConfig& config, int64_t bytes, int caches, const std::string& flag,
                          const std::string& what);

// The bounded caches together, each filled to budget + slack, must fit in the
// machine's memory (the full cache grows without bound and stops when its
// memory runs out). Throws Error naming --budget.
void check_budgets_fit_memory(const ModelConfig& config, const std::vector<PolicyConfig>& policies);

}  // namespace h2o
