#pragma once
// Teacher-forced feeding of several caches on one backend, as a needle test
// and an ask feed them (SEMANTICS.md: the cut rule, slack and chunk as eval's):
// the same tokens to every cache, a chunk at a time, all caches in one
// forward pass (batched: the weights read once) or one pass each, reading
// back only what the caller asks for.
#include <cstdint>
#include <span>
#include <vector>

#include "core/runtime/backend.h"

namespace h2o {

// What one feed() reads back of each cache.
struct FeedReadout {
  bool last_logits = false;  // the logits of the last token fed
  bool all_logits = false;   // the logits of every token fed (the answer's rows)
  bool states = false;       // every layer's positions and scores after the last chunk
};

struct FeedOutput {
  std::vector<float> logits;        // rows x vocab, in the order fed
  std::vector<LayerState> states;   // one per layer, when asked
};

class CacheFeed {
 public:
  // `chunk`: tokens per forward pass (>= 1).
  CacheFeed(Backend& backend, int chunk, bool batched);

  // Feeds `tokens` to every cache, `chunk` at a time from the first. A cache
  // that cannot grow (a KV limit, out of memory) is an Error naming its policy.
  std::vector<FeedOutput> feed(std::span<SessionCache* const> caches, std::span<const int> tokens,
                               const FeedReadout& readout = {});
  // Greedy decoding: from `first` (each cache's next token, chosen already),
  // `count` tokens a cache, each chosen from the logits of the one before.
  std::vector<std::vector<int>> greedy(std::span<SessionCache* const> caches, std::span<const int> first, int count);

  Backend& backend() const { return backend_; }
  int chunk() const { return chunk_; }
  // Tokens fed to any cache so far, summed over the caches.
  int64_t tokens_fed() const { return fed_; }

 private:
  // One forward pass over the items, batched or one by one; failures named.
  void run(std::span<ForwardItem> items);

  Backend& backend_;
  int chunk_;
  bool batched_;
  int64_t fed_ = 0;
};

}  // namespace h2o
