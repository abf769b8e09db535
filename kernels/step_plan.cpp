#include "kernels/step_plan.h"

#include <algorithm>

#include "core/base/error.h"

namespace h2o::kern {

int tile_rows(int group) { return std::max(1, kMaxTileQueries / std::max(group, 1)); }

int next_power_of_two(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

int split_keys_for(int key_bucket, int blocks_per_split, const SplitTarget& target) {
  const int wanted = std::max(1, kBlocksPerSm * std::max(target.sm_count, 1) / std::max(blocks_per_split, 1));
  // Rounded down to the granule, so that the low end has at least `wanted` splits.
  const int low_end = std::max(key_bucket / 2, 1);
  return std::max(low_end / wanted / kSplitGranule * kSplitGranule, kMinSplitKeys);
}

StepPlan plan_step(std::span<const ItemShape> items, int group, const SplitTarget& target) {
  StepPlan plan;
  plan.items.resize(items.size());
  const int per_tile = tile_rows(group);
  std::vector<RowTile> low_bit_tiles;  // after the others: attention_low_bit takes them
  for (size_t i = 0; i < items.size(); ++i) {
    const ItemShape& s = items[i];
    if (s.rows <= 0) throw Error("plan: an item with no rows");
    ItemPlan& p = plan.items[i];
    p.first_row = plan.rows;
    p.keys = s.n_before + s.rows;
    p.cut = s.rule.cut_due(p.keys);
    p.kept = p.cut ? predicted_cut(s.rule, p.keys, s.tokens_seen + s.rows).kept : p.keys;
    p.evicted = p.keys - p.kept;
    plan.any_cut = plan.any_cut || p.cut;
    plan.max_keys = std::max(plan.max_keys, p.keys);
    for (int r = 0; r < s.rows; ++r) plan.row_item.push_back(int(i));
    for (int r = 0; r < s.rows; r += per_tile) {
      const RowTile tile{int(i), r, std::min(per_tile, s.rows - r)};
      (s.low_bit ? low_bit_tiles : plan.tiles).push_back(tile);
      plan.tile_queries = std::max(plan.tile_queries, tile.row_count * std::max(group, 1));
    }
    plan.rows += s.rows;
  }
  plan.low_bit_tiles = int(low_bit_tiles.size());
  plan.tiles.insert(plan.tiles.end(), low_bit_tiles.begin(), low_bit_tiles.end());
  // The grid depends on the bucket, the tiles (items and rows: the graph key)
  // and the device, never on the exact key count, so one graph serves a bucket.
  plan.key_bucket = kKeyBucket * next_power_of_two(std::max((plan.max_keys + kKeyBucket - 1) / kKeyBucket, 1));
  plan.split_keys = split_keys_for(plan.key_bucket, target.kv_heads * int(plan.tiles.size()), target);
  plan.splits = (plan.max_keys + plan.split_keys - 1) / plan.split_keys;
  plan.split_bucket = (plan.key_bucket + plan.split_keys - 1) / plan.split_keys;
  plan.key_stride = plan.split_bucket * plan.split_keys;

  // Classified rows: the last row to choose from or to return, the leading
  // rows teacher forcing scores, every row when all logits are asked for.
  for (size_t i = 0; i < items.size(); ++i) {
    const ItemShape& s = items[i];
    ItemPlan& p = plan.items[i];
    p.logit_row.assign(size_t(s.rows), -1);
    for (int r = 0; r < s.rows; ++r) {
      if (!s.classified(s.rows, r)) continue;
      p.logit_row[size_t(r)] = int(plan.classify.size());
      plan.classify.push_back(p.first_row + r);
    }
  }
  return plan;
}

size_t BlockLayout::add(size_t bytes, size_t align) {
  size_ = (size_ + align - 1) / align * align;
  const size_t at = size_;
  size_ += bytes;
  return at;
}

}  // namespace h2o::kern
