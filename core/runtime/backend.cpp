#include "core/runtime/backend.h"

#include <algorithm>
#include <cmath>

namespace h2o {

int SessionCache::max_size() const {
  int most = 0;
  for (int l = 0; l < layers(); ++l)
    for (int h = 0; h < kv_heads(); ++h) most = std::max(most, size(l, h));
  return most;
}

double Backend::measure_bandwidth(int64_t) { return NAN; }

int feed_one(Backend& backend, SessionCache& cache, int token, const TokenChoice& choice) {
  int next = -1;
  ForwardItem item;
  item.cache = &cache;
  item.tokens = std::span<const int>(&token, 1);
  item.choose = &choice;
  item.chosen = &next;
  backend.forward(std::span<ForwardItem>(&item, 1));
  return next;
}

bool is_device_backend(const std::string& backend_kind) { return backend_kind.rfind("cuda", 0) == 0; }  // cuda, cuda-sim

int default_slack(const std::string& backend_kind) { return is_device_backend(backend_kind) ? kDeviceSlack : 0; }

bool batched_by_default(const std::string& backend_kind) { return is_device_backend(backend_kind); }

}  // namespace h2o
