#pragma once
// The one cut every policy shares (SEMANTICS.md), written once over an
// EvictionRule: score → top-k → keep. The CPU cache calls it; the CUDA
// backend's device cut is tested against it.
#include <cstdint>
#include <span>
#include <vector>

#include "core/policy/policy.h"

namespace h2o {

// The slots of one (layer, KV head) cache that survive a cut, ascending.
// `positions` are the slots' stream positions (ascending), `scores` their
// scores (read only when the rule keeps some by score). A cache holding no
// more than budget + slack tokens keeps every slot.
std::vector<int> select_kept(const EvictionRule& rule, std::span<const int32_t> positions,
                             std::span<const float> scores);

}  // namespace h2o
