#pragma once
// When each (layer, KV head) let each position of a stream go — the per-head
// part of a policy's whole history (stream_history.h), which is the one part
// that grows with layers x heads: 1024 entries a position at Llama-2-7B.
//
// Each entry is the position's age when the head let it go (the step less
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

namespace h2o {

class PackedReader;
class CheckpointWriter;

class HeadEvictions {
 public:
  HeadEvictions(int layers, int kv_heads);
  int64_t length() const { return length_; }
  // One more position, held by every head.
  void add_position();
  // Head (layer, kv) lets position p (born at `birth`) go at `step`: false,
  // changing nothing, if it already had.
  bool let_go(int layer, int kv, int64_t p, int32_t birth, int32_t step);
  // The step at which head (layer, kv) let p go, or -1 while it holds it.
  int32_t at(int layer, int kv, int64_t p, int32_t birth) const;
  // at() for every position, from the births of all of them.
  std::vector<int32_t> column(int layer, int kv, std::span<const int32_t> birth) const;
  // Heap bytes held.
  int64_t bytes() const;
  // The table in a checkpoint (history_checkpoint.cpp), and read back from
  // one, every step checked against the positions' births. Written head by
  // head as the eviction steps' differences from one position to the next,
  // read back through let_go(): the side table of far ages needs no form of
  // its own. (Compressed, about the size of the raw ages: 11.4 against 11.1
  // MB for Llama-2-7B x four panes at 3,000 steps.) load() throws Error.
  void save(CheckpointWriter& out, std::span<const int32_t> birth) const;
  static HeadEvictions load(PackedReader& in, int layers, int kv_heads, std::span<const int32_t> birth);

 private:
  static constexpr int64_t kBlock = 4096;
  static constexpr uint16_t kHeld = 0xFFFF, kFar = 0xFFFE;  // kFar: the age is in far_
  int64_t heads_;  // layers x KV heads
  int kv_heads_;
  int64_t length_ = 0;
  std::vector<std::unique_ptr<uint16_t[]>> blocks_;  // [p / kBlock][head][p % kBlock]
  std::unordered_map<uint64_t, int32_t> far_;        // (head, p) -> age, for ages >= kFar

  uint16_t* codes(int64_t head, int64_t p) const {
    return blocks_[size_t(p / kBlock)].get() + head * kBlock + p % kBlock;
  }
  static uint64_t far_key(int64_t head, int64_t p) { return (uint64_t(head) << 40) | uint64_t(p); }
};

}  // namespace h2o
