#include "core/runtime/backend.h"

#include <algorithm>

namespace h2o {

int SessionCache::max_size() const {
  int most = 0;
  for (int l = 0; l < layers(); ++l)
    for (int h = 0; h < kv_heads(); ++h) most = std::max(most, size(l, h));
  return most;
}

}  // namespace h2o
