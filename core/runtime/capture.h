#pragma once
// What a caller may ask a backend to read out of one forward pass besides
// the next token: attention probabilities of chosen layers and heads, trimmed
// as asked, and the cache state (positions and scores) of chosen layers. The
// caller decides per step and per session (a CapturePlan), so that only what
// is drawn or recorded crosses from a device, and nothing when nobody asks.
#include <cstdint>
#include <span>
#include <vector>

namespace h2o {

// Which query heads a capture holds.
inline constexpr int kAllHeads = -2;   // every query head of the layer
inline constexpr int kGroupMean = -1;  // per KV head, the mean over its query heads

// Attention of one layer in one step.
struct CaptureRequest {
  int layer = 0;
  int head = kAllHeads;  // a query head (>= 0), kAllHeads or kGroupMean
  int rows = 1;          // the step's last `rows` query rows (fewer if the step fed fewer)
  int max_keys = 0;      // per KV head at most this many keys: the first `keep_first` and the latest rest; 0: all
  int keep_first = 0;
  int top_k = 0;         // > 0: each captured head's share of attention on its top_k keys, before trimming
};

struct CapturePlan {
  std::vector<CaptureRequest> attention;
  std::vector<int> layer_states;  // layers whose positions and scores are read after the cut
  bool empty() const { return attention.empty() && layer_states.empty(); }
};

// Post-softmax attention of one layer, as a CaptureRequest asked for it.
struct AttentionCapture {
  int layer = 0;
  int head = kAllHeads;                  // the request's head selection
  int rows = 0;                          // query rows captured
  std::vector<int32_t> query_positions;  // their stream positions
  // Per KV head: the key slots kept (cache and new tokens, before the cut), as stream positions.
  std::vector<std::vector<int32_t>> key_positions;
  // Per captured head (every query head; one per KV head for kGroupMean; one
  // for a single head): rows x key_positions[its KV head].size(), row-major.
  std::vector<std::vector<float>> probs;
  // Per captured head: the share of each row's attention on its top_k keys, averaged over the rows.
  std::vector<float> top_share;

  // How many heads a request captures, and the KV head of captured head c.
  static int captured_heads(int head, int heads, int kv_heads);
  static int kv_head_of(int head, int c, int heads, int kv_heads);
};

// The positions and scores every KV head of one layer holds after a step's cut.
struct LayerState {
  int layer = 0;
  std::vector<std::vector<int32_t>> positions;  // per KV head, slot order (= stream order)
  std::vector<std::vector<float>> scores;       // per KV head: each token's score, as the policy's ScoreRule sums it
};

// ---- shared by every backend, so that all of them trim and measure alike ----

// The slots a capture keeps out of n: every slot, or the first `keep_first` and the latest rest.
std::vector<int> kept_key_slots(int n, int max_keys, int keep_first);

// Share of a row's mass on its k largest entries (NaN-free input; 0 total: no share).
// Accumulates one row into `sum` / `rows` the way AttentionCapture::top_share averages.
void add_top_k_share(std::span<const float> row, int k, double& sum, int& rows);

}  // namespace h2o
