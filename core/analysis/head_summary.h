#pragma once
// The older part of a stream's per-head eviction history, kept in summary so
// that it does not cost 2 bytes a position for each of a model's layers x KV
// heads (1024 at Llama-2-7B) for ever (head_evictions.h keeps the newest
// positions exactly and hands its oldest blocks here).
//
// For each (group of kGroup positions, head) it keeps the steps each fate
// covered there: the union of the group's positions' intervals (survival.h's
// position_fates). That is all a survival raster needs once its columns bin
// whole groups — a cell shows a fate if any of its positions held it in any of
// its steps — so such a raster drawn from the summary is, cell for cell, the
// one the exact steps draw, at any binning of the steps.
// Positions whose fate is not settled when summarised — still held by the
// head, a sink, or still among the recent — stay exact, per head, so a head
// that lets one go later records its step.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/policy/fate.h"

namespace h2o {

class PackedReader;
class CheckpointWriter;

class HeadSummary {
 public:
  static constexpr int64_t kGroup = 64;            // positions a column of the summary covers
  static constexpr uint32_t kNever = UINT32_MAX;    // a span's end: still covered now
  static constexpr int64_t kMaxStep = (1 << 29) - 1;  // a span's steps are clamped here (31 days at 200 a second)

  explicit HeadSummary(int64_t heads = 0) : heads_(heads), exact_(size_t(heads)) {}
  int64_t heads() const { return heads_; }
  // Positions [0, end()) are summarised.
  int64_t end() const { return end_; }

  // Summarises the group of positions [end(), end() + kGroup), given the step
  // at which each head let each go (-1 while held): step_of(head, i) for the
  // group's i-th position. `birth` is the whole stream so far.
  void add_group(const EvictionRule& rule, std::span<const int32_t> birth,
                 const std::function<int32_t(int64_t head, int64_t i)>& step_of);

  // The step at which `head` let summarised position p go (-1: held) if that
  // is kept exactly; nullptr if only the group's summary knows it.
  const int32_t* exact(int64_t head, int64_t p) const;
  // Head lets p go at `step`: false if p is not kept exactly or was let go already.
  bool let_go(int64_t head, int64_t p, int32_t step);

  // One head's summarised positions in [first, end): on_span(position, fate,
  // from_step, to_step) for the steps a fate covered (to_step < 0: still
  // covered) — a group's spans at its first position, and each position's
  // recent steps, which follow from `birth` and `rule` (the whole stream and
  // the summary's rule) unless the group kept its own. Exactly kept positions
  // are left out: for_each_exact gives them, on_exact(p, step).
  void for_each_span(int64_t head, int64_t first, int64_t end, const EvictionRule& rule, std::span<const int32_t> birth,
                     const std::function<void(int64_t, Fate, int64_t, int64_t)>& on_span) const;
  void for_each_exact(int64_t head, int64_t first, int64_t end,
                      const std::function<void(int64_t, int32_t)>& on_exact) const;

  int64_t bytes() const;

  // In a checkpoint (analyzer_checkpoint.cpp); load() checks every index and
  // order against `birth`, and throws Error.
  void save(CheckpointWriter& out) const;
  static HeadSummary load(PackedReader& in, int64_t heads, std::span<const int32_t> birth);

 private:
  // A fate's steps [from, to) in one (group, head). Recent's are kept only
  // where a position left while among the recent, behind a marker of fate
  // Unborn (a policy keeps its recent window, so that is rare); else they
  // follow from the births.
  struct Span {
    uint32_t fate_and_from;  // fate in the top 3 bits
    uint32_t to;             // kNever: open
  };
  struct Exact {
    int32_t position, step;
  };
  // The spans of kChunkGroups groups, each chunk sized to fit once full (a
  // vector that doubled would hold up to twice the summary's bytes).
  static constexpr int64_t kChunkGroups = 64;
  struct Chunk {
    std::vector<uint32_t> first_span{0};  // [group in chunk x heads + head] -> its first span; one more at the end
    std::vector<Span> spans;
  };
  int64_t heads_;
  int64_t end_ = 0;
  std::vector<Chunk> chunks_;
  std::vector<std::vector<Exact>> exact_;  // [head]: by position

  static Span span(Fate fate, uint32_t from, uint32_t to) { return {uint32_t(fate) << 29 | from, to}; }
  static Fate fate_of(const Span& s) { return Fate(s.fate_and_from >> 29); }
  static uint32_t from_of(const Span& s) { return s.fate_and_from & ((1u << 29) - 1); }
  // The first of a head's exactly kept positions at or after p.
  template <class List>
  static auto first_at(List& list, int64_t p) {
    return std::lower_bound(list.begin(), list.end(), p, [](const Exact& e, int64_t q) { return e.position < q; });
  }
};

}  // namespace h2o
