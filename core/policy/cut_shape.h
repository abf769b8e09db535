#pragma once
// The index arithmetic of one (layer, KV head) cut, written once: select_kept()
// (the CPU cache's cut), the host's prediction of how many tokens survive (to
// size the CUDA backend's readback, core/runtime/cache_book.h) and the CUDA
// eviction kernel (kernels/evict.cu) all use it.
#include <cstdint>
#include <cstring>

#include "core/base/host_device.h"

namespace h2o {

struct CutShape {
  int sinks = 0;         // leading slots kept as sinks
  int recent_begin = 0;  // first slot of the recent tail
  int by_score = 0;      // slots kept for their score, among [sinks, recent_begin)
  int kept = 0;          // sinks + by_score + recent tail
};

// `n` slots, the first `sinks_present` of which hold stream positions below
// the rule's sinks; `recent` and `by_score` as in EvictionRule.
H2O_HD CutShape cut_shape(int n, int sinks_present, int recent, int by_score) {
  CutShape c;
  c.sinks = sinks_present < n ? sinks_present : n;
  const int tail_begin = n - recent;
  c.recent_begin = tail_begin > c.sinks ? tail_begin : c.sinks;
  const int middle = c.recent_begin - c.sinks;
  c.by_score = by_score > 0 && middle > 0 ? (by_score < middle ? by_score : middle) : 0;
  c.kept = c.sinks + c.by_score + (n - c.recent_begin);
  return c;
}

// A total order on (score, slot) in which a larger key survives first:
// higher score, and among equal scores the more recent (higher) slot, as
// select_kept breaks ties. -0 and +0 are one score, as == says.
H2O_HD uint64_t survival_key(float score, int slot) {
  uint32_t bits;
  if (score == 0.0f) score = 0.0f;
  memcpy(&bits, &score, sizeof bits);
  const uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (uint64_t(ordered) << 32) | uint32_t(slot);
}

}  // namespace h2o
