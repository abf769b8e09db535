#include "core/runtime/kv_memory_account.h"

#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "core/base/format.h"

namespace h2o {

void KvMemoryAccount::grow(int64_t bytes) {
  if (limit > 0 && allocated + bytes > limit)
    throw Error("out of KV memory: " + format_mib(allocated, 1) + " held, " + format_mib(bytes, 1) +
                " more needed, limit " + format_mib(limit, 1));
  allocated += bytes;
  peak = std::max(peak, allocated);
}

}  // namespace h2o
