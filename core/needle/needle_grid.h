#pragma once
// h2o-cli needle's grid (SEMANTICS.md, "Needles"): every (length, depth) of a
// needle test through every policy, each cell's survival per (layer, KV head)
// at the question and at the answer, and its recall with and without the
// needle. Streams that share a prefix share its work: one trunk of caches
// walks the haystack, and each cell runs on forks of it taken at the last
// chunk boundary before its needle (Backend::fork; bit-identical to feeding
// the cell's stream from the start).
#include <cstdint>
#include <functional>
#include <vector>

#include "core/needle/needle_case.h"
#include "core/needle/needle_measure.h"
#include "core/policy/policy.h"
#include "core/runtime/backend.h"

namespace h2o {

struct NeedleGridSpec {
  NeedleCase input;
  std::vector<int64_t> lengths;
  std::vector<int> depths;
  std::vector<PolicyConfig> policies;
  int chunk = 1;              // tokens per forward pass (the references: 1)
  bool batched = false;       // every policy's cache in one forward pass
  bool share_prefix = true;   // fork a trunk rather than feed each stream from the start
};

// One (length, depth, policy) of the grid.
struct NeedleOutcome {
  int64_t length = 0;
  int depth = 0;
  size_t policy = 0;  // index into NeedleGridSpec::policies
  int32_t needle_begin = 0, needle_end = 0;
  // Needle positions held per (layer, KV head), [layer * kv_heads + kv_head].
  std::vector<int> held_question, held_answer;
  Recall recall, without;  // the answer after the stream, and after the stream without the needle
};

struct NeedleGrid {
  std::vector<NeedleOutcome> outcomes;  // by length, then depth, then policy (the spec's orders)
  int64_t tokens_fed = 0;               // over every cache, the work the grid did
};

struct NeedleHooks {
  std::function<void(int done, int cells)> progress;  // after each cell (and each length's run without the needle)
  std::function<bool()> stop;                         // true: stop before the next cell (Ctrl-C)
};

// Throws Error as check_needle_case does, and where a cache cannot grow (naming its policy).
NeedleGrid run_needle_grid(Backend& backend, const NeedleGridSpec& spec, const NeedleHooks& hooks = {});

}  // namespace h2o
