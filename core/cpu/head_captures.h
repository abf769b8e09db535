#pragma once
// The attention captures one KV head's task fills in the CPU backend: for
// each capture of its layer, the untrimmed rows of the query heads it owns
// (every key held, this step's rows), then — once every row is in — trimmed to
// the keys asked for, with their top-k share (core/runtime/capture.h).
#include <cstdint>
#include <span>
#include <vector>

#include "core/model/model.h"
#include "core/runtime/capture.h"

namespace h2o {

// One attention capture being filled: the untrimmed rows of each captured
// head, trimmed into `out` by the task that owns its KV head.
struct CaptureInProgress {
  const CaptureRequest* request = nullptr;
  AttentionCapture* out = nullptr;
};

class HeadCaptures {
 public:
  // The captures of `layer` among `captures`, for KV head `kv_head` after a
  // step of `rows` rows that leaves `keys` keys held.
  HeadCaptures(const std::vector<CaptureInProgress>& captures, const ModelConfig& cfg, int layer, int kv_head, int rows,
               int keys);
  // Row `row` of query head `query_head`: its attention weights over the
  // first `visible` keys (the rest stay 0: not visible to that row).
  void add(int query_head, int row, const float* weights, int visible);
  // Trims each capture to its asked-for keys (`positions`: the stream
  // position of each held key) and measures its top-k share.
  void trim(std::span<const int32_t> positions);

 private:
  struct Owned {
    const CaptureInProgress* capture;
    int first_row;                         // the first captured row of the step
    std::vector<std::vector<float>> rows;  // per captured head of this KV head: rows x keys
  };
  std::vector<Owned> owned_;
  int kv_head_, keys_, group_;
};

}  // namespace h2o
