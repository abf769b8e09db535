#pragma once
// When each (layer, KV head) let each position of a stream go — the per-head
// part of a policy's whole history (stream_history.h), which is the one part
// that grows with layers x heads: 1024 entries a position at Llama-2-7B.
//
// The newest positions (at least `exact_positions` of them) are kept exactly;
// older ones, a block of 4096 at a time, go into a summary (head_summary.h)
// that still draws the whole-stream raster exactly and keeps exactly what is
// not settled (positions a head still holds). Of a summarised position a head
// let go, only the group's summary knows: at() says kSummarised.
//
// Each exact entry is the position's age when the head let it go (the step less
// the position's birth step) in 2 bytes: exact, half the 4 of a step. A head
// keeps a position at most as long as the policy keeps a heavy hitter, so an
// age past 65,533 steps is rare (a sink, or a token the stream kept for
// minutes); such an age is kept exactly in a side table. Positions are
// stored in blocks of 4096, head by head inside a block, so a head's whole
// column reads in long runs and the table grows without reallocating.
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/analysis/head_summary.h"

namespace h2o {

class PackedReader;
class CheckpointWriter;

class HeadEvictions {
 public:
  static constexpr int64_t kBlock = 4096;
  // Enough for the text, the detail view and a long look back at one head:
  // 32 MiB a policy at Llama-2-7B.
  static constexpr int64_t kExactPositions = 16384;
  static constexpr int32_t kSummarised = -2;  // at(): the head let it go; only its group's summary says when

  HeadEvictions(int layers, int kv_heads, int64_t exact_positions = kExactPositions);
  int64_t length() const { return length_; }
  // One more position, held by every head.
  void add_position();
  // Moves the oldest exact blocks into the summary while more than
  // exact_positions + kBlock are kept exactly. `rule` and `birth` (the whole
  // stream) give each position's fates.
  void summarise_old(const EvictionRule& rule, std::span<const int32_t> birth);
  // Positions [0, summarised_end()) are in the summary.
  int64_t summarised_end() const { return base_; }
  const HeadSummary& summary() const { return summary_; }
  // Head (layer, kv) lets position p (born at `birth`) go at `step`: false,
  // changing nothing, if it already had.
  bool let_go(int layer, int kv, int64_t p, int32_t birth, int32_t step);
  // The step at which head (layer, kv) let p go, -1 while it holds it, or kSummarised.
  int32_t at(int layer, int kv, int64_t p, int32_t birth) const;
  // at() for every position, from the births of all of them; where that is
  // kSummarised, the entry of `summarised` instead.
  std::vector<int32_t> column(int layer, int kv, std::span<const int32_t> birth,
                              std::span<const int32_t> summarised = {}) const;
  // Heap bytes held.
  int64_t bytes() const;
  // The table in a checkpoint (analyzer_checkpoint.cpp), and read back from
  // one, every step checked against the positions' births: the summary, then
  // the exact part head by head as the eviction steps' differences from one
  // position to the next, read back through let_go() (the side table of far
  // ages needs no form of its own). load() throws Error; `summarised`: the
  // checkpoint's form has the summary (format 1's tables are all exact).
  void save(CheckpointWriter& out, std::span<const int32_t> birth) const;
  static HeadEvictions load(PackedReader& in, int layers, int kv_heads, std::span<const int32_t> birth,
                            bool summarised, int64_t exact_positions = kExactPositions);

 private:
  static constexpr uint16_t kHeld = 0xFFFF, kFar = 0xFFFE;  // kFar: the age is in far_
  int64_t heads_;  // layers x KV heads
  int kv_heads_;
  int64_t exact_positions_;
  int64_t base_ = 0;  // the first exact position, a multiple of kBlock
  int64_t length_ = 0;
  std::vector<std::unique_ptr<uint16_t[]>> blocks_;  // [(p - base_) / kBlock][head][p % kBlock]
  std::unordered_map<uint64_t, int32_t> far_;        // (head, p) -> age, for ages >= kFar
  HeadSummary summary_;

  uint16_t* codes(int64_t head, int64_t p) const {
    return blocks_[size_t((p - base_) / kBlock)].get() + head * kBlock + p % kBlock;
  }
  int32_t exact_step(int64_t head, int64_t p, int32_t birth) const;
  // Moves positions [base_, base_ + kBlock) into the summary.
  void summarise_block(const EvictionRule& rule, std::span<const int32_t> birth);
  static uint64_t far_key(int64_t head, int64_t p) { return (uint64_t(head) << 40) | uint64_t(p); }
  static int64_t far_position(uint64_t key) { return int64_t(key & ((uint64_t(1) << 40) - 1)); }
};

}  // namespace h2o
