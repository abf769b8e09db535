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

int key_bucket_of(int keys) {
  return kKeyBucket * next_power_of_two(std::max((keys + kKeyBucket - 1) / kKeyBucket, 1));
}

int split_keys_for(int64_t low_end_keys, const SplitTarget& target) {
  const int64_t wanted = std::max(1, kBlocksPerSm * std::max(target.sm_count, 1) / std::max(target.kv_heads, 1));
  // Rounded down to the granule, so that the low ends have at least `wanted` splits.
  const int64_t split = std::max<int64_t>(low_end_keys, 1) / wanted / kSplitGranule * kSplitGranule;
  return int(std::clamp<int64_t>(split, kMinSplitKeys, int64_t(1) << 30));
}

StepPlan plan_step(std::span<const ItemShape> items, int group, const SplitTarget& target) {
  StepPlan plan;
  plan.items.resize(items.size());
  const int per_tile = tile_rows(group);
  // Query tiles, the quantized items' after the others (attention_low_bit takes them).
  std::vector<RowTile> row_tiles, low_bit_tiles;
  int64_t low_end_keys = 0;  // half of each tile's bucket
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
      (s.low_bit ? low_bit_tiles : row_tiles).push_back(tile);
      plan.tile_queries = std::max(plan.tile_queries, tile.row_count * std::max(group, 1));
      low_end_keys += key_bucket_of(p.keys) / 2;
    }
    plan.rows += s.rows;
  }
  row_tiles.insert(row_tiles.end(), low_bit_tiles.begin(), low_bit_tiles.end());
  // The grid depends on the items' buckets, their tiles and the device, never
  // on the exact key counts, so one graph serves the buckets (graph_key).
  plan.key_bucket = key_bucket_of(plan.max_keys);
  plan.split_keys = split_keys_for(low_end_keys, target);
  const auto splits_for = [&](int keys) { return (keys + plan.split_keys - 1) / plan.split_keys; };
  plan.splits = splits_for(plan.max_keys);
  plan.split_bucket = splits_for(plan.key_bucket);
  plan.key_stride = plan.split_bucket * plan.split_keys;
  for (RowTile unit : row_tiles) {
    const int splits = splits_for(key_bucket_of(plan.items[size_t(unit.item)].keys));
    for (unit.split = 0; unit.split < splits; ++unit.split) plan.tiles.push_back(unit);
    if (items[size_t(unit.item)].low_bit) plan.low_bit_tiles += splits;
  }

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
