#pragma once
// CUDA Graph buckets, in plain C++: which decode steps share one captured
// graph, and a small least-recently-used store of the graphs made so far.
//
// A decode step (one new row per item, nothing read back but the chosen
// tokens and the evictions) is captured once per key and replayed after
// that. Everything a later step changes (cache pointers and lengths, token
// ids, rules) lives in device memory that the kernels read, so one graph
// serves every step with the same key: the items and rows, the attention grid
// (split blocks and their length, chosen per power-of-two bucket of each
// item's keys, so a growing cache changes graphs only at 256, 512, 1024, ...
// keys), whether any cache is cut, how many capture units the step runs
// (attention captures are part of the graph; what they capture lives in the
// inputs block), and the generation of the backend's scratch buffers (a
// reallocation moves them).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <utility>

#include "kernels/step_plan.h"

namespace h2o::kern {

struct GraphKey {
  int items = 0, rows = 0, key_bucket = 0, split_keys = 0, split_bucket = 0, classified = 0;
  bool any_cut = false;
  int tiles = 0;           // the attention grid: the tiles' splits (each item's bucket)
  int low_bit_tiles = 0;   // attention_low_bit's grid, and whether the flush runs
  int capture_units = -1;  // attention captures: capture.cu's grid (the app captures every step); -1 none
  uint64_t buffers = 0;   // scratch generation
  bool operator==(const GraphKey&) const = default;
};

GraphKey graph_key(const StepPlan& plan, uint64_t buffers_generation, int capture_units = -1);

// A bounded store of graphs by key; the oldest unused one is destroyed first.
template <class Handle>
class GraphCache {
 public:
  GraphCache(size_t capacity, std::function<void(Handle)> destroy) : capacity_(capacity), destroy_(std::move(destroy)) {}
  ~GraphCache() { clear(); }
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  // The graph of `key`, now the most recently used; nothing if there is none.
  std::optional<Handle> find(const GraphKey& key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        ++hits_;
        return entries_.front().second;
      }
    ++misses_;
    return std::nullopt;
  }
  void insert(const GraphKey& key, Handle graph) {
    entries_.emplace_front(key, graph);
    while (entries_.size() > capacity_) {
      destroy_(entries_.back().second);
      entries_.pop_back();
    }
  }
  void clear() {
    for (auto& e : entries_) destroy_(e.second);
    entries_.clear();
    seen_.clear();
  }
  // True if `key` was met before (and remembers it). A key is captured the
  // second time it is met: its first step runs eagerly, so every kernel and
  // cuBLAS routine has been loaded and chosen outside a capture.
  bool seen_before(const GraphKey& key) {
    for (const GraphKey& k : seen_)
      if (k == key) return true;
    seen_.push_front(key);
    if (seen_.size() > 4 * capacity_) seen_.pop_back();
    return false;
  }
  size_t size() const { return entries_.size(); }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  size_t capacity_;
  std::function<void(Handle)> destroy_;
  std::list<std::pair<GraphKey, Handle>> entries_;
  std::list<GraphKey> seen_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace h2o::kern
