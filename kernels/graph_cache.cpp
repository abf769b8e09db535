#include "kernels/graph_cache.h"

namespace h2o::kern {

GraphKey graph_key(const StepPlan& plan, uint64_t buffers_generation, int capture_units) {
  GraphKey key;
  key.items = int(plan.items.size());
  key.rows = plan.rows;
  key.key_bucket = plan.key_bucket;
  key.split_keys = plan.split_keys;
  key.split_bucket = plan.split_bucket;
  key.classified = int(plan.classify.size());
  key.any_cut = plan.any_cut;
  key.tiles = int(plan.tiles.size());
  key.low_bit_tiles = plan.low_bit_tiles;
  key.capture_units = capture_units;
  key.buffers = buffers_generation;
  return key;
}

}  // namespace h2o::kern
