#pragma once
// A small attention capture the analytics and the recording tests share: two
// KV heads (one query head each) holding different keys, one row each.
#include "core/runtime/capture.h"

namespace h2o::test {

inline AttentionCapture two_head_capture() {
  AttentionCapture a;
  a.layer = 1;
  a.rows = 1;
  a.query_positions = {9};
  a.key_positions = {{0, 3, 9}, {0, 5, 9}};
  a.probs = {{0.5f, 0.25f, 0.25f}, {0.1f, 0.6f, 0.3f}};
  return a;
}

}  // namespace h2o::test
