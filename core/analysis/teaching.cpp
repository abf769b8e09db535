#include "core/analysis/teaching.h"

#include <algorithm>
#include <numeric>

#include "core/analysis/text_cells.h"

namespace h2o {

namespace {

std::string display_piece(const PolicyHistory& h, int64_t p, int64_t length) {
  return character_at([&](int64_t q) { return h.piece(q); }, p, length);
}

// Whether any KV head (kv < 0) or the given one holds p at `step`.
bool held_at(const PolicyHistory& h, int layer, int kv, int kv_heads, int64_t p, int64_t step) {
  const auto held = [&](int k) {
    const int32_t e = h.evicted_at(layer, k, p);
    return e < 0 || e > step;
  };
  if (kv >= 0) return held(kv);
  for (int k = 0; k < kv_heads; ++k)
    if (held(k)) return true;
  return false;
}

}  // namespace

HeadViewData head_view(const CaptureWindow& window, const std::vector<PolicyHistory>& histories, int layer, int head,
                       int group, int64_t query_step, int64_t step, int max_keys) {
  HeadViewData out;
  out.layer = layer;
  out.head = head;
  for (size_t i = 0; i < histories.size(); ++i) {
    const PolicyHistory& h = histories[i];
    HeadViewPane pane;
    pane.policy = h.policy().describe();
    pane.config = h.policy();
    const auto* captures = window.captures(i, layer);
    const StepCapture* chosen = nullptr;
    if (captures)
      for (auto it = captures->rbegin(); it != captures->rend() && !chosen; ++it)
        if (it->step <= query_step && it->capture.rows > 0) chosen = &*it;
    if (!chosen) {
      out.panes.push_back(std::move(pane));
      continue;
    }
    const AttentionCapture& c = chosen->capture;
    pane.keys_cached = h.numbers_at(chosen->step).cached_tokens;
    const std::vector<int32_t> cols = attention_columns(c, head, group, 0, 0);
    std::vector<double> values;
    append_attention_rows(c, head, group, cols, values);
    const int row = c.rows - 1;
    const int64_t length = h.length_at(step);
    pane.query_position = c.query_positions.empty() ? -1 : c.query_positions.back();
    if (pane.query_position >= 0 && pane.query_position < h.length())
      pane.query_text = display_piece(h, pane.query_position, h.length());
    std::vector<size_t> order(cols.size());
    std::iota(order.begin(), order.end(), size_t(0));
    const auto weight = [&](size_t k) {
      const double v = values[size_t(row) * cols.size() + k];
      return std::isnan(v) ? -1.0 : v;
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight(a) > weight(b); });
    std::vector<size_t> picked;
    for (size_t k : order) {
      if (weight(k) < 0) continue;
      pane.keys_attended += 1;
      if (int(picked.size()) < max_keys || cols[k] < h.rule().sinks) picked.push_back(k);
    }
    std::sort(picked.begin(), picked.end());
    const int kv = head >= 0 ? head / std::max(group, 1) : -1;
    const int kv_heads = int(c.key_positions.size());
    for (size_t k : picked) {
      HeadViewKey key;
      key.position = cols[k];
      key.weight = weight(k);
      if (key.position < h.length()) {
        key.text = display_piece(h, key.position, h.length());
        key.fate = fate_of(h.rule(), key.position, held_at(h, layer, kv, kv_heads, key.position, step),
                           std::max<int64_t>(length, key.position + 1));
      }
      pane.top_weight = std::max(pane.top_weight, key.weight);
      pane.keys.push_back(std::move(key));
    }
    if (out.query_step < 0) out.query_step = chosen->step;
    out.panes.push_back(std::move(pane));
  }
  return out;
}

namespace {

// A layer's latest captures, until `max_rows` rows, oldest first.
std::vector<const AttentionCapture*> latest_captures(const std::deque<StepCapture>* captures, int max_rows) {
  std::vector<const AttentionCapture*> picked;
  if (!captures) return picked;
  int rows = 0;
  for (auto it = captures->rbegin(); it != captures->rend() && rows < max_rows; ++it) {
    picked.push_back(&it->capture);
    rows += it->capture.rows;
  }
  std::reverse(picked.begin(), picked.end());
  return picked;
}

// The keys KV head `kv` held in any of the captures: the first 4 and the latest rest, at most `max_cols`.
std::vector<int32_t> kv_head_columns(const std::vector<const AttentionCapture*>& picked, int kv, int max_cols) {
  std::vector<std::span<const int32_t>> lists;
  for (const AttentionCapture* c : picked)
    if (kv < int(c->key_positions.size())) lists.emplace_back(c->key_positions[size_t(kv)]);
  return union_columns(lists, max_cols, 4);
}

}  // namespace

ModelViewData model_view(const CaptureWindow& window, const PolicyHistory& history, int policy, int layers, int heads,
                         int group, int max_rows, int max_cols) {
  ModelViewData out;
  out.policy = policy;
  out.policy_title = std::string(history.policy().unit().title);
  out.layers = layers;
  out.heads = heads;
  std::vector<double> values;
  for (int l = 0; l < layers; ++l) {
    const std::vector<const AttentionCapture*> picked = latest_captures(window.captures(size_t(policy), l), max_rows);
    // The query heads of a group (consecutive) share their KV head's columns.
    std::vector<int32_t> keys;
    int keys_kv = -1;
    for (int h = 0; h < heads; ++h) {
      ModelViewCell cell;
      cell.layer = l;
      cell.head = h;
      if (!picked.empty()) {
        if (const int kv = h / std::max(group, 1); kv != keys_kv) {
          keys = kv_head_columns(picked, kv, max_cols);
          keys_kv = kv;
        }
        values.clear();
        for (const AttentionCapture* c : picked) append_attention_rows(*c, h, group, keys, values);
        cell.cols = int(keys.size());
        cell.rows = cell.cols ? int(values.size() / keys.size()) : 0;
        cell.values.assign(values.begin(), values.end());
        for (float v : cell.values)
          if (!std::isnan(v)) cell.top = std::max(cell.top, v);
      }
      out.cells.push_back(std::move(cell));
    }
  }
  return out;
}

}  // namespace h2o
