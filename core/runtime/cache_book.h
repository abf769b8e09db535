#pragma once
// The rules of a session's KV cache that do not depend on where it lives,
// written once above the backends: how a cache grows and how many tokens a
// cut keeps (when one is due: EvictionRule::cut_due). The CPU cache (f32 and low-bit heads) and the
// CUDA backend's cache and step planner all use these; the cut's own index
// arithmetic is core/policy/cut_shape.h, which the eviction kernel includes.
#include <cstdint>

#include "core/policy/cut_shape.h"
#include "core/policy/policy.h"

namespace h2o {

// The most rows any run of a cache under `rule` needs for a step of `rows`
// new tokens: budget + slack + rows when it evicts (the cut runs after the
// step's attention), else the most a head may hold.
int capacity_limit(const EvictionRule& rule, int rows);

// The capacity of a run reserving `capacity` rows that must hold `needed`:
// unchanged when they fit, else grown by half as it fills (`least` rows at
// least) and never past `limit` unless `needed` itself is. So a cache grows
// a logarithmic number of times, and a large budget costs memory only as the
// stream fills it.
int grown_capacity(int capacity, int needed, int limit, int least = 64);

// The rows per (layer, KV head) a cache holding `held` of `capacity` reserves
// to take `rows` more under `rule`.
int grown_capacity(const EvictionRule& rule, int held, int capacity, int rows);

// The cut a (layer, KV head) holding `keys` slots gets at the end of a step
// after which `seen_after` tokens have been seen. Every head of a cache gets
// the same counts: sinks are the first stream positions, never evicted, so
// all of them that were seen are still cached, in the first slots.
CutShape predicted_cut(const EvictionRule& rule, int keys, int64_t seen_after);

}  // namespace h2o
