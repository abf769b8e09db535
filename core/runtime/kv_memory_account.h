#pragma once
// The KV memory of all the caches one backend made: what they hold now, the
// most they ever held together, and the limit (0: none) past which a cache
// may not grow, as a device's memory would stop it.
#include <cstdint>

namespace h2o {

struct KvMemoryAccount {
  int64_t allocated = 0, peak = 0, limit = 0;
  // Books `bytes` more; throws Error("out of KV memory: ...") and books nothing past the limit.
  void grow(int64_t bytes);
  void release(int64_t bytes) { allocated -= bytes; }
};

}  // namespace h2o
