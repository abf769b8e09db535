#include "core/runtime/forward_plan.h"

#include <algorithm>

namespace h2o {

void check_item(const ForwardItem& item, const ForwardLimits& limits) {
  if (item.tokens.empty()) throw Error(limits.backend + ": forward() with no tokens");
  for (int t : item.tokens)
    if (t < 0 || t >= limits.vocab)
      throw Error("token id " + std::to_string(t) + " is outside the model's vocabulary (" +
                  std::to_string(limits.vocab) + ")");
  if (!item.capture) return;
  const auto check_layer = [&](int layer) {
    if (layer < 0 || layer >= limits.layers) throw Error("capture: layer " + std::to_string(layer) + " does not exist");
  };
  for (const CaptureRequest& req : item.capture->attention) {
    check_layer(req.layer);
    if (req.head < kAllHeads || req.head >= limits.heads)
      throw Error("capture: head " + std::to_string(req.head) + " does not exist");
  }
  for (int layer : item.capture->layer_states) check_layer(layer);
}

bool LogitNeeds::classified(int rows, int r) const {
  const bool last = r == rows - 1;
  return (last && (choose || logits)) || (logits && all_logits) || r < forced_rows;
}

LogitNeeds logit_needs(const ForwardItem& item) {
  LogitNeeds needs;
  needs.choose = item.choose && item.chosen;
  needs.logits = item.logits != nullptr;
  needs.all_logits = item.all_logits;
  needs.forced_rows = item.forced ? int(std::min(item.forced->next.size(), item.tokens.size())) : 0;
  return needs;
}

}  // namespace h2o
