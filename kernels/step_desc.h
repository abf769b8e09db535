#pragma once
// The plain data a step hands its kernels, written by the host into one
// input block that is copied to the device before the step runs. Kernels
// read their per-step values (cache pointers, lengths, rules) from here, not
// from their launch arguments, so a captured graph replays any later step of
// the same shape.
#include <cstdint>

#include "core/base/host_device.h"
#include "core/policy/low_bit_layout.h"
#include "core/policy/score_rule.h"

namespace h2o::kern {

// Tile sizes the attention kernels and the host planning agree on.
inline constexpr int kKeyBucket = 256;      // the smallest key bucket; buckets double (a graph serves a bucket)
inline constexpr int kMinSplitKeys = 64;    // fewest keys a split block (flash-decoding) is given
inline constexpr int kSplitGranule = 32;    // split lengths are multiples of this
inline constexpr int kBlocksPerSm = 4;      // split blocks per SM the split count aims at
inline constexpr int kAttentionWarps = 4;   // warps of an attention_partial block, whatever the tuning's block size
inline constexpr int kMaxTileQueries = 8;   // query rows x heads of one KV head that a block serves
inline constexpr int kMaxHeadDim = 128;

// The model's shape, as the kernels see it.
struct ModelDims {
  int dim = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, group = 0, vocab = 0;
  int q_dim = 0, kv_dim = 0, qkv_stride = 0;  // a row of the fused Q|K|V projection: q_dim + 2 kv_dim
  float norm_eps = 1e-5f;
  // Each pair's RoPE frequency (ModelConfig::rope_frequencies(): theta and any
  // scaling already applied), head_dim / 2 doubles on the device.
  const double* rope_freq = nullptr;
};

// A quantized cache's own arrays (core/policy/low_bit_layout.h's layout, as
// the CPU's LowBitHead keeps it), each per (layer, KV head). Slots in stream
// order fall in three runs: the sinks and the residual are f16 rows of
// full_k / full_v (sinks first), the quantized run between them is packed code
// rows (f16 rows where that half keeps 16 bits). counts[head] holds that
// head's kvq::Runs; heads differ once cuts and flushes have run, so they live
// on the device, and the host reads them back after each step for its
// capacities and byte counts.
struct LowBitArrays {
  kvq::Shape shape;                  // key_bits 0: the cache is not quantized (CacheArrays::k, v hold it)
  uint16_t* full_k = nullptr;        // [..][full_cap][head_dim] f16: sinks, then the residual
  uint16_t* full_v = nullptr;
  int full_cap = 0;
  uint8_t* quant_k = nullptr;        // [..][cap][key_row_bytes]: the quantized run's codes
  uint8_t* quant_v = nullptr;        // [..][cap][value_row_bytes]
  uint32_t* value_scales = nullptr;  // [..][cap][head_dim / G]: each run's kvq::Scale as a word (scale_word)
  uint32_t* key_scales = nullptr;    // [..][group_cap][head_dim]: each key group and channel's
  int group_cap = 0;
  int32_t* group_of = nullptr;       // [..][cap]: the key group of each quantized row
  int32_t* counts = nullptr;         // [..][kCounts]: LowBitCount

  H2O_HD bool used() const { return shape.key_bits != 0; }
};
// A head's counts, in kvq::Runs' order.
enum LowBitCount { kSinks = 0, kQuantized = 1, kResidual = 2, kGroups = 3, kCounts = 4 };
H2O_HD kvq::Runs runs_at(const int32_t* counts) {
  return kvq::Runs{counts[kSinks], counts[kQuantized], counts[kResidual], counts[kGroups]};
}
H2O_HD void store_runs(const kvq::Runs& r, int32_t* counts) {
  counts[kSinks] = r.sinks;
  counts[kQuantized] = r.quantized;
  counts[kResidual] = r.residual;
  counts[kGroups] = r.groups;
}

// One session's cache: every array is [layer][kv_head][cap] rows.
struct CacheArrays {
  void* k = nullptr;      // keys rotated to their position, [..][head_dim], storage type
  void* v = nullptr;      // values
  void* k_raw = nullptr;  // keys before RoPE (rolling positions only), re-rotated after a cut
  int32_t* pos = nullptr; // stream positions
  float* score = nullptr; // each slot's score, as the item's ScoreRule sums it
  int cap = 0;
  LowBitArrays low;       // a quantized cache: its keys and values (k, v, k_raw null)
};

// One session's part of the step.
struct ItemDesc {
  CacheArrays cache;
  long long tokens_seen = 0;  // stream position of its first new row
  int n_before = 0;           // tokens every (layer, KV head) holds before the step
  int rows = 0;               // new tokens
  int first_row = 0;          // its first row in the batch
  int rolling = 0;            // RoPE positions from slots
  ScoreRule score = {};       // what its scores sum (core/policy/score_rule.h)
  int cut = 0;                // cut back at the end of the step
  int sinks = 0, recent = 0, by_score = 0;  // the EvictionRule
  int kept = 0;               // tokens per head after the cut (the host's count; the kernel checks it)
  int evicted_base = 0;       // index of its first evicted position in the evicted output
};

// An attention block's work: the keys of split `split` (split_keys of them
// from split x split_keys) for the queries of rows [row_begin, row_begin +
// row_count) of one item, in every KV head (the grid's second dimension).
struct RowTile {
  int item = 0, row_begin = 0, row_count = 0, split = 0;
};

// Where attention of one (item, layer) is written in full for a capture (null: not captured).
struct CaptureSlot {
  float* probs = nullptr;  // [rows][heads][n_before + rows] of the item's last `rows` rows
  int rows = 0;
};

// The next-token choice of one item.
struct ChooseDesc {
  int mode = 0;         // 0 none, 1 greedy, 2 temperature + top-p
  int logits_row = 0;   // its last row among the classified rows
  float temperature = 0, top_p = 1;
  double uniform = 0;
  int32_t* out = nullptr;
};

// One teacher-forced row: its NLL, and KL / top-1 agreement against a reference row.
struct ForcedRow {
  int logits_row = 0;
  int target = 0;                      // the token that follows it
  const float* ref_logits = nullptr;   // the reference cache's row of this step; null: none
  const double* ref_logz = nullptr;
  double* out = nullptr;               // nll, kl, agree (as 0/1)
};

// One piece of a capture's readout.
struct CaptureUnit {
  int kind = 0;                 // 0: trimmed probabilities of one captured head and row; 1: key positions of one KV head
  int item = 0, layer = 0;
  const float* probs = nullptr; // the (item, layer) CaptureSlot's rows
  int n = 0;                    // keys before the cut
  int row = 0;                  // kind 0: row within the slot's rows
  int head = 0;                 // the request's selection: a query head, -2 all heads, -1 group mean
  int captured = 0;             // kind 0: captured head index; kind 1: the KV head
  int top_k = 0;
  const int* slots = nullptr;   // kept key slots, ascending
  int n_slots = 0;
  float* out_probs = nullptr;   // kind 0: n_slots values
  double* out_share = nullptr;  // kind 0: top_k share of the row (NaN when it has none)
  int32_t* out_positions = nullptr;  // kind 1: n_slots positions
  float* work = nullptr;        // n floats of scratch
};

}  // namespace h2o::kern
