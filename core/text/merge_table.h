#pragma once
// Byte-level BPE merges keyed by the pair of ids they join: an open-addressing
// array, not std::unordered_map, because a node per merge (280k for Llama-3)
// made loading a vocabulary allocation-bound.
#include <cstdint>
#include <vector>

namespace h2o::text {

struct Merge {
  int rank;
  int merged;
};

class MergeTable {
 public:
  explicit MergeTable(size_t capacity = 0) {
    size_t n = 16;
    while (3 * n < 4 * capacity) n *= 2;
    slots_.assign(n, Slot{});
  }
  // Adds the merge of (left, right) unless one is there already: the first rank wins.
  void add(int left, int right, Merge merge) {
    if (4 * (count_ + 1) > 3 * slots_.size()) grow();  // at most 3/4 full: 8 MB for Llama-3's 280k merges
    Slot& s = slots_[probe(key(left, right))];
    if (s.key != kEmpty) return;
    s = {key(left, right), merge};
    ++count_;
  }
  const Merge* find(int left, int right) const {
    const Slot& s = slots_[probe(key(left, right))];
    return s.key == kEmpty ? nullptr : &s.merge;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);  // ids are never negative, so no pair has this key
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static uint64_t key(int left, int right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
  size_t probe(uint64_t k) const {
    const size_t mask = slots_.size() - 1;
    // A multiplicative hash spreads ids that differ only in their low bits.
    for (size_t i = size_t((k * 0x9E3779B97F4A7C15ull) >> 20) & mask;; i = (i + 1) & mask)
      if (slots_[i].key == kEmpty || slots_[i].key == k) return i;
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.key != kEmpty) slots_[probe(s.key)] = s;
  }

  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace h2o::text
