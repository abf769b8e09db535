#include "kernels/capture_layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace h2o::kern {

CaptureLayout::CaptureLayout(std::span<const CaptureJob> jobs, int items, const ModelDims& d, BlockLayout& readback,
                             BlockLayout& inputs)
    : layers_(d.layers), slot_rows_(size_t(items) * d.layers, 0), slot_at_(slot_rows_.size(), 0) {
  for (const CaptureJob& job : jobs) {
    // One slot per captured (item, layer): the most rows any of its requests asks.
    for (const CaptureRequest& req : *job.requests) {
      int& rows = slot_rows_[size_t(job.item) * layers_ + size_t(req.layer)];
      rows = std::max(rows, std::min(std::max(req.rows, 1), job.rows));
    }
    for (int l = 0; l < layers_; ++l) {
      const size_t at = size_t(job.item) * layers_ + size_t(l);
      slot_at_[at] = probs_floats_;
      probs_floats_ += size_t(slot_rows_[at]) * d.heads * size_t(job.keys);
    }
    job.out->assign(job.requests->size(), {});
    for (size_t c = 0; c < job.requests->size(); ++c) {
      const CaptureRequest& req = (*job.requests)[c];
      const size_t slot = size_t(job.item) * layers_ + size_t(req.layer);
      AttentionCapture& cap = (*job.out)[c];
      cap.layer = req.layer;
      cap.head = req.head;
      cap.rows = std::min(std::max(req.rows, 1), job.rows);
      for (int r = job.rows - cap.rows; r < job.rows; ++r) cap.query_positions.push_back(int32_t(job.tokens_seen + r));
      const int heads = AttentionCapture::captured_heads(req.head, d.heads, d.kv_heads);
      cap.key_positions.assign(size_t(d.kv_heads), {});
      cap.probs.assign(size_t(heads), {});
      cap.top_share.assign(size_t(heads), NAN);

      lists_.push_back(kept_key_slots(job.keys, req.max_keys, req.keep_first));
      lists_at_.push_back(inputs.add(lists_.back().size() * sizeof(int)));
      Readout ro;
      ro.out = &cap;
      ro.top_k = req.top_k;
      ro.slots = int(lists_.back().size());
      Unit base;
      base.unit.item = job.item;
      base.unit.layer = req.layer;
      base.unit.n = job.keys;
      base.unit.head = req.head;
      base.unit.top_k = req.top_k;
      base.unit.n_slots = ro.slots;
      base.list = lists_.size() - 1;
      base.probs_at = slot_at_[slot];
      for (int g = 0; g < d.kv_heads; ++g) {
        Unit u = base;
        u.unit.kind = 1;
        u.unit.captured = g;
        u.out_at = readback.add(size_t(ro.slots) * sizeof(int32_t));
        ro.positions.push_back(u.out_at);
        units_.push_back(u);
      }
      ro.probs.assign(size_t(heads), {});
      ro.shares.assign(size_t(heads), {});
      for (int ch = 0; ch < heads; ++ch)
        for (int r = 0; r < cap.rows; ++r) {
          Unit u = base;
          u.unit.kind = 0;
          u.unit.captured = ch;
          u.unit.row = slot_rows_[slot] - cap.rows + r;  // the slot holds the step's last rows
          u.out_at = readback.add(size_t(ro.slots) * sizeof(float));
          u.share_at = readback.add(sizeof(double), sizeof(double));
          u.work_at = work_floats_;
          work_floats_ += size_t(job.keys);
          ro.probs[size_t(ch)].push_back(u.out_at);
          ro.shares[size_t(ch)].push_back(u.share_at);
          units_.push_back(u);
        }
      readouts_.push_back(std::move(ro));
    }
  }
}

std::vector<CaptureSlot> CaptureLayout::slots(float* probs) const {
  std::vector<CaptureSlot> out(slot_rows_.size());
  for (size_t at = 0; at < out.size(); ++at)
    if (slot_rows_[at] > 0) out[at] = {probs + slot_at_[at], slot_rows_[at]};
  return out;
}

void CaptureLayout::write_lists(char* inputs_host) const {
  for (size_t c = 0; c < lists_.size(); ++c)
    if (!lists_[c].empty()) std::memcpy(inputs_host + lists_at_[c], lists_[c].data(), lists_[c].size() * sizeof(int));
}

std::vector<CaptureUnit> CaptureLayout::units(float* probs, float* work, const char* inputs_device,
                                              char* readback_device) const {
  std::vector<CaptureUnit> out;
  for (const Unit& u : units_) {
    CaptureUnit unit = u.unit;
    unit.probs = probs + u.probs_at;
    unit.slots = reinterpret_cast<const int*>(inputs_device + lists_at_[u.list]);
    if (unit.kind == 1) {
      unit.out_positions = reinterpret_cast<int32_t*>(readback_device + u.out_at);
    } else {
      unit.out_probs = reinterpret_cast<float*>(readback_device + u.out_at);
      unit.out_share = reinterpret_cast<double*>(readback_device + u.share_at);
      unit.work = work + u.work_at;
    }
    out.push_back(unit);
  }
  return out;
}

void CaptureLayout::read(const char* back) const {
  for (const Readout& ro : readouts_) {
    AttentionCapture& cap = *ro.out;
    for (size_t g = 0; g < ro.positions.size(); ++g) {
      const auto* pos = reinterpret_cast<const int32_t*>(back + ro.positions[g]);
      cap.key_positions[g].assign(pos, pos + ro.slots);
    }
    for (size_t ch = 0; ch < ro.probs.size(); ++ch) {
      // add_top_k_share's average: over the rows that have any mass (NaN marks one that has none).
      double share = 0;
      int shared_rows = 0;
      for (size_t r = 0; r < ro.probs[ch].size(); ++r) {
        const auto* p = reinterpret_cast<const float*>(back + ro.probs[ch][r]);
        cap.probs[ch].insert(cap.probs[ch].end(), p, p + ro.slots);
        double row_share;
        std::memcpy(&row_share, back + ro.shares[ch][r], sizeof row_share);
        if (ro.top_k > 0 && !std::isnan(row_share)) share += row_share, ++shared_rows;
      }
      if (ro.top_k > 0) cap.top_share[ch] = shared_rows ? float(share / shared_rows) : NAN;
    }
  }
}

}  // namespace h2o::kern
