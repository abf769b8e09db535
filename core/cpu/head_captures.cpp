#include "core/cpu/head_captures.h"

#include <cmath>

namespace h2o {

HeadCaptures::HeadCaptures(const std::vector<CaptureInProgress>& captures, const ModelConfig& cfg, int layer,
                           int kv_head, int rows, int keys)
    : kv_head_(kv_head), keys_(keys), group_(cfg.group_size()) {
  for (const CaptureInProgress& c : captures) {
    if (c.request->layer != layer) continue;
    const int heads = AttentionCapture::captured_heads(c.request->head, cfg.n_heads, cfg.n_kv_heads);
    Owned o{&c, rows - c.out->rows, std::vector<std::vector<float>>(size_t(heads))};
    for (int ch = 0; ch < heads; ++ch)
      if (AttentionCapture::kv_head_of(c.request->head, ch, cfg.n_heads, cfg.n_kv_heads) == kv_head)
        o.rows[size_t(ch)].assign(size_t(c.out->rows) * keys, 0.0f);
    owned_.push_back(std::move(o));
  }
}

void HeadCaptures::add(int query_head, int row, const float* weights, int visible) {
  for (Owned& o : owned_) {
    if (row < o.first_row) continue;
    const int sel = o.capture->request->head;
    if (sel >= 0 && sel != query_head) continue;
    const size_t ch = size_t(sel == kAllHeads ? query_head : sel == kGroupMean ? kv_head_ : 0);
    float* dst = &o.rows[ch][size_t(row - o.first_row) * keys_];
    const float weight = sel == kGroupMean ? 1.0f / float(group_) : 1.0f;
    for (int j = 0; j < visible; ++j) dst[j] += weight * weights[j];
  }
}

void HeadCaptures::trim(std::span<const int32_t> positions) {
  for (Owned& o : owned_) {
    AttentionCapture& out = *o.capture->out;
    const CaptureRequest& req = *o.capture->request;
    const std::vector<int> slots = kept_key_slots(keys_, req.max_keys, req.keep_first);
    for (int s : slots) out.key_positions[size_t(kv_head_)].push_back(positions[size_t(s)]);
    for (size_t ch = 0; ch < o.rows.size(); ++ch) {
      if (o.rows[ch].empty()) continue;
      std::vector<float>& probs = out.probs[ch];
      double share = 0;
      int shared_rows = 0;
      for (int r = 0; r < out.rows; ++r) {
        const std::span<const float> full(&o.rows[ch][size_t(r) * keys_], size_t(keys_));
        if (req.top_k > 0) add_top_k_share(full, req.top_k, share, shared_rows);
        for (int s : slots) probs.push_back(full[size_t(s)]);
      }
      if (req.top_k > 0) out.top_share[ch] = shared_rows ? float(share / shared_rows) : NAN;
    }
  }
}

}  // namespace h2o
