#pragma once
// One (layer, KV head) of a CPU cache at reduced precision (SEMANTICS.md, "KV
// precision"; KIVI's layout). The slots, in stream order, fall in three runs:
// the sinks (f16), the quantized tokens (key groups of at most G consecutive
// slots, packed codes), and the residual (f16, the newest). Keys and values
// are read back a few slots at a time into the caller's tile, so attention
// never holds a dequantized copy of the cache.
#include <cstdint>
#include <span>
#include <vector>

#include "core/cpu/kv_quant.h"
#include "core/cpu/query_row.h"
#include "core/model/rope.h"
#include "core/policy/kv_precision.h"

namespace h2o {

class LowBitHead {
 public:
  LowBitHead(const KvPrecision& kv, int head_dim, int sinks, bool rolling);

  const kvq::Runs& runs() const { return runs_; }
  int size() const { return runs_.size(); }
  int sinks() const { return runs_.sinks; }          // slots [0, sinks) are f16
  int quantized() const { return runs_.quantized; }  // slots [sinks, sinks + quantized) hold codes
  int groups() const { return runs_.groups; }

  // What room for `rows` more tokens costs: every run sized for the step's
  // worst case (low_bit_layout.h's most_after_step), grown by half and never
  // past `limit` tokens a run. plan() books nothing; grow() applies it.
  struct Growth {
    int full = 0, quantized = 0, groups = 0;  // capacities, in tokens and key groups
    int64_t bytes = 0;                        // allocated bytes after it
  };
  Growth plan(int rows, int limit) const;
  void grow(const Growth& growth);

  // Appends the newest token: its key after RoPE (and before, under rolling
  // positions) and value, rounded to f16.
  void append(const float* key, const float* raw_key, const float* value, int32_t position);
  // out[i * head_dim ..] = the key (value) of slot first + i, as attention reads it back.
  void read_keys(int first, int count, float* out);
  void read_values(int first, int count, float* out);
  // Attention straight from the codes of the quantized run, for every query
  // row that sees it: q.probs[slot] = q . k of each quantized slot, and q.out
  // += the sum of q.probs[slot] * v over them.
  void score_quantized(std::span<const cpu::QueryRow> rows);
  void add_quantized_values(std::span<const cpu::QueryRow> rows);
  // Keeps `kept` (ascending slots) in order; key groups shrink, never re-quantized.
  void cut(std::span<const int> kept);
  // low_bit_layout.h's flush rule: while the residual holds R + G tokens or
  // more, its oldest G are quantized as one group.
  void flush();
  // Rolling positions (f16 caches only): slot's key rotated afresh from its pre-RoPE copy.
  void rotate_key(int slot, const RopeAngles& angles);

  // Codes, two f16 numbers a group, and the f16 tokens at 2 bytes an element (SEMANTICS.md).
  int64_t live_bytes() const;
  int64_t allocated_bytes() const;

 private:
  void read_slots(int first, int count, bool keys, float* out);
  void read_quantized(int first, int count, bool keys, float* out);
  void index_groups();

  kvq::Shape shape_;
  int hd_, sink_positions_;
  bool rolling_;
  kvq::Runs runs_;  // tokens in each run, and the key groups (group_size_'s count)
  // The f16 runs: sinks, then residual, [row][hd].
  std::vector<uint16_t> full_k_, full_v_, full_raw_;
  int full_cap_ = 0;
  // The quantized run: packed rows (f16 where that half keeps 16 bits), value
  // scales per token and run of G channels, key scales per group and channel.
  std::vector<uint8_t> quant_k_, quant_v_;
  std::vector<kvq::Scale> value_scales_, key_scales_;
  int quant_cap_ = 0, group_cap_ = 0;
  std::vector<int> group_size_;   // members of each key group, oldest first
  std::vector<int> group_first_;  // the group's first row in the quantized run
  std::vector<float> m_, s_, tile_;  // read-back scratch: widened numbers, a group's rows
  std::vector<float> weights_;  // fused attention scratch: q o s of a key group
};

}  // namespace h2o
