#pragma once
// One query row of an attention step over a cached head: its rotated query,
// the probabilities it gets over the `visible` first slots, and its output
// (both written by the attention).

namespace h2o::cpu {

struct QueryRow {
  const float* query;
  float* probs;
  float* out;
  int visible;
};

}  // namespace h2o::cpu
