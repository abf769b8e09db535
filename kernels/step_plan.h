#pragma once
// Host planning of one forward pass on the device, in plain C++ (unit-tested
// without a GPU): where each item's rows sit in the batch, how the attention
// queries are tiled and the keys split, which rows are classified, whether
// and how far each cache is cut — all from host bookkeeping, so the device
// never has to be asked how big a cache is.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/policy/policy.h"
#include "core/runtime/cache_book.h"
#include "core/runtime/forward_plan.h"
#include "kernels/step_desc.h"

namespace h2o::kern {

// What the host knows of one item before its step: its cache, and which of
// its rows get logits (the LogitNeeds every backend computes the same way).
struct ItemShape : LogitNeeds {
  int n_before = 0;         // tokens each (layer, KV head) holds
  int rows = 0;             // new tokens
  int64_t tokens_seen = 0;  // before this step
  EvictionRule rule;
  bool low_bit = false;     // a quantized cache (attention_low_bit reads it)
};

struct ItemPlan {
  int first_row = 0;
  int keys = 0;           // n_before + rows: what the step attends over
  bool cut = false;       // more than budget + slack: cut back at the end of the step
  int kept = 0;           // tokens per (layer, KV head) after the step
  int evicted = 0;        // per (layer, KV head) in this step
  std::vector<int> logit_row;  // per row of the item: its index among the classified rows, or -1
};

// What the attention grid is sized for: the live split blocks of every query
// tile, times the KV heads, aim at kBlocksPerSm blocks on each of the
// device's SMs.
struct SplitTarget {
  int kv_heads = 1;
  int sm_count = 1;
};

struct StepPlan {
  int rows = 0;          // T: rows of all items
  int max_keys = 0;
  int key_bucket = 0;    // key_bucket_of(max_keys): the longest item's
  int split_keys = 0;    // keys per split block (a function of the items' buckets, their tiles and the target)
  int splits = 0;        // split blocks the longest item needs
  int split_bucket = 0;  // the most splits of one tile: enough for the longest item's bucket
  int key_stride = 0;    // split_bucket * split_keys: row stride of the attention-logit scratch
  int tile_queries = 0;  // most queries (rows x group) of one tile: the attention kernel's register tile
  bool any_cut = false;
  std::vector<ItemPlan> items;
  // The attention blocks' work: each query tile once per split its item's
  // bucket may need (so a graph serves the whole bucket, and a short item
  // beside a long one takes no more blocks than its own keys ask for); the
  // quantized items' last.
  std::vector<RowTile> tiles;
  int low_bit_tiles = 0;       // how many of them, at the end, are quantized items'
  std::vector<int> row_item;   // the item of every batch row
  std::vector<int> classify;   // batch rows whose logits are computed, ascending
};

// Query rows of one item that one attention block serves, for a GQA group size.
int tile_rows(int group);
int next_power_of_two(int x);
// kKeyBucket x the least power of two that holds `keys`: what an item's
// attention grid is planned for (the grid changes only when a bucket does).
int key_bucket_of(int keys);

// Keys per split block where the query tiles' buckets, half of each summed
// (`low_end_keys`: each at its bucket's low end), are to give the target's
// blocks over its KV heads; at the buckets' top ends they give twice that.
int split_keys_for(int64_t low_end_keys, const SplitTarget& target);

StepPlan plan_step(std::span<const ItemShape> items, int group, const SplitTarget& target = {});

// Byte offsets of the pieces of one buffer (the step's inputs, its readback).
class BlockLayout {
 public:
  // Reserves `bytes` aligned to `align` and returns the offset.
  size_t add(size_t bytes, size_t align = 16);
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

}  // namespace h2o::kern
