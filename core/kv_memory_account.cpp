// KvMemoryAccount (backend.h): the KV memory one backend's caches hold together.
#include <algorithm>
#include <cstdio>
#include <string>

#include "backend.h"

namespace h2o {

void KvMemoryAccount::grow(int64_t bytes) {
  if (limit > 0 && allocated + bytes > limit) {
    const auto mib = [](int64_t b) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f", double(b) / double(1 << 20));
      return std::string(text);
    };
    throw Error("out of KV memory: " + mib(allocated) + " MiB held, " + mib(bytes) + " MiB more needed, limit " +
                mib(limit) + " MiB");
  }
  allocated += bytes;
  peak = std::max(peak, allocated);
}

}  // namespace h2o
