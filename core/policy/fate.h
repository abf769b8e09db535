#pragma once
// What a policy did with one stream position — the role it holds in the
// cache, or that it left — as the app colours tokens and rasters.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/policy/policy.h"

namespace h2o {

// Ordered so that a raster's cells can hold the value directly.
enum class Fate : uint8_t {
  Unborn = 0,  // not fed yet (raster cells in the future)
  Evicted,     // left the cache
  Cached,      // held, in no special role (the full cache; StreamingLLM's slack backlog)
  Heavy,       // held for its score (H2O: a heavy hitter; TOVA: attended now)
  Recent,      // among the last `recent` slots
  Sink,        // one of the first `sinks` positions, always held
};
inline constexpr int kFateCount = 6;
const char* fate_name(Fate fate);  // generic: "heavy hitter" for Heavy
// The name this policy gives a fate ("attended now" for TOVA's Heavy).
std::string fate_label(const PolicyConfig& policy, Fate fate);

// Why the policy holds a token of this fate, or let it go, in a sentence from
// its rule ("held: among the newest 32 tokens, which it always keeps").
std::string fate_reason(const PolicyConfig& policy, Fate fate);

// The fate of `position` in a stream of `stream_length` tokens, given whether
// the shown cache holds it. A policy that never evicts has no roles: all it holds is Cached.
Fate fate_of(const EvictionRule& rule, int64_t position, bool cached, int64_t stream_length);
inline Fate fate_of(const PolicyConfig& policy, int64_t position, bool cached, int64_t stream_length) {
  return fate_of(policy.rule(), position, cached, stream_length);
}

// Fates of every position [0, stream_length), `cached` listing held positions (any order).
std::vector<Fate> token_fates(const PolicyConfig& policy, std::span<const int32_t> cached, int64_t stream_length);

}  // namespace h2o
