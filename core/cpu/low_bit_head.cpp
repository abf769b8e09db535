#include "core/cpu/low_bit_head.h"

#include <algorithm>
#include <cstring>

#include "core/cpu/cpu_ops.h"
#include "core/model/dtype.h"
#include "core/runtime/cache_book.h"

namespace h2o {
namespace {

bool low(int bits) { return bits < 16; }

}  // namespace

LowBitHead::LowBitHead(const KvPrecision& kv, int head_dim, int sinks, bool rolling)
    : kv_(kv), hd_(head_dim), sink_positions_(sinks), rolling_(rolling), m_(size_t(head_dim)), s_(size_t(head_dim)) {}

int LowBitHead::key_row_bytes() const { return kvq::row_bytes(hd_, kv_.key_bits); }
int LowBitHead::value_row_bytes() const { return kvq::row_bytes(hd_, kv_.value_bits); }

LowBitHead::Growth LowBitHead::plan(int rows, int limit) const {
  Growth g;
  g.full = grown_capacity(full_cap_, sinks_ + residual_ + rows, limit);
  if (kv_.quantized()) {
    // Everything in the residual may be flushed by this step's end.
    g.quantized = grown_capacity(quant_cap_, quantized_ + residual_ + rows, limit);
    g.groups = grown_capacity(group_cap_, groups() + (residual_ + rows) / kv_.group + 1, limit, 4);
  }
  const int64_t full_row = int64_t(hd_) * 2 * (rolling_ ? 3 : 2);
  const int64_t quant_row = key_row_bytes() + value_row_bytes() +
                            (low(kv_.value_bits) ? int64_t(hd_ / kv_.group) * int64_t(sizeof(kvq::Scale)) : 0);
  const int64_t group_bytes = low(kv_.key_bits) ? int64_t(hd_) * int64_t(sizeof(kvq::Scale)) : 0;
  g.bytes = g.full * full_row + int64_t(g.quantized) * quant_row + int64_t(g.groups) * group_bytes;
  return g;
}

void LowBitHead::grow(const Growth& g) {
  const auto exactly = [](auto& buffer, size_t n) {  // resize() alone may double the capacity
    buffer.reserve(n);
    buffer.resize(n);
  };
  if (g.full > full_cap_) {
    full_cap_ = g.full;
    exactly(full_k_, size_t(full_cap_) * hd_);
    exactly(full_v_, size_t(full_cap_) * hd_);
    if (rolling_) exactly(full_raw_, size_t(full_cap_) * hd_);
  }
  if (g.quantized > quant_cap_) {
    quant_cap_ = g.quantized;
    exactly(quant_k_, size_t(quant_cap_) * key_row_bytes());
    exactly(quant_v_, size_t(quant_cap_) * value_row_bytes());
    if (low(kv_.value_bits)) exactly(value_scales_, size_t(quant_cap_) * (hd_ / kv_.group));
  }
  if (g.groups > group_cap_) {
    group_cap_ = g.groups;
    if (low(kv_.key_bits)) exactly(key_scales_, size_t(group_cap_) * hd_);
    group_size_.reserve(size_t(group_cap_));
    group_first_.reserve(size_t(group_cap_));
  }
}

void LowBitHead::append(const float* key, const float* raw_key, const float* value, int32_t position) {
  // A sink arrives before anything else is cached (positions ascend), so the
  // sinks stay the first run.
  const bool sink = position < sink_positions_ && quantized_ == 0 && residual_ == 0;
  const size_t row = size_t(sink ? sinks_ : sinks_ + residual_) * hd_;
  kvq::f32_to_f16_row(key, hd_, &full_k_[row]);
  kvq::f32_to_f16_row(value, hd_, &full_v_[row]);
  if (rolling_) kvq::f32_to_f16_row(raw_key, hd_, &full_raw_[row]);
  ++(sink ? sinks_ : residual_);
}

void LowBitHead::rotate_key(int slot, const RopeAngles& angles) {
  const size_t row = size_t(full_row(slot)) * hd_;
  tile_.resize(std::max(tile_.size(), size_t(hd_)));
  float* key = tile_.data();
  kvq::f16_to_f32_row(&full_raw_[row], hd_, key);
  rope_rotate(key, 1, hd_, angles);
  kvq::f32_to_f16_row(key, hd_, &full_k_[row]);
}

void LowBitHead::read_keys(int first, int count, float* out) { read_slots(first, count, true, out); }
void LowBitHead::read_values(int first, int count, float* out) { read_slots(first, count, false, out); }

// Slots [first, first + count), keys or values: the quantized run in one
// read, each f16 slot (sink or residual) widened on its own.
void LowBitHead::read_slots(int first, int count, bool keys, float* out) {
  const std::vector<uint16_t>& full = keys ? full_k_ : full_v_;
  for (int slot = first; slot < first + count;) {
    if (slot >= sinks_ && slot < sinks_ + quantized_) {
      const int n = std::min(first + count, sinks_ + quantized_) - slot;
      read_quantized(slot - sinks_, n, keys, out + size_t(slot - first) * hd_);
      slot += n;
      continue;
    }
    kvq::f16_to_f32_row(&full[size_t(full_row(slot)) * hd_], hd_, out + size_t(slot - first) * hd_);
    ++slot;
  }
}

// Rows [first, first + count) of the quantized run, keys or values.
void LowBitHead::read_quantized(int first, int count, bool keys, float* out) {
  const int bits = keys ? kv_.key_bits : kv_.value_bits;
  const int row_bytes = keys ? key_row_bytes() : value_row_bytes();
  const uint8_t* rows = keys ? quant_k_.data() : quant_v_.data();
  if (!low(bits)) {  // this half kept at 16 bits
    for (int i = 0; i < count; ++i)
      kvq::f16_to_f32_row(reinterpret_cast<const uint16_t*>(rows + size_t(first + i) * row_bytes), hd_,
                          out + size_t(i) * hd_);
    return;
  }
  if (!keys) {
    const int runs = hd_ / kv_.group;
    for (int i = 0; i < count; ++i) {
      const size_t row = size_t(first + i);
      kvq::read_value_row(rows + row * row_bytes, hd_, kv_.group, bits, &value_scales_[row * runs],
                          out + size_t(i) * hd_);
    }
    return;
  }
  // Keys: each group's per-channel numbers widened once for its members here.
  int group = int(std::upper_bound(group_first_.begin(), group_first_.end(), first) - group_first_.begin()) - 1;
  for (int row = first; row < first + count; ++group) {
    const int end = std::min(first + count, group_first_[size_t(group)] + group_size_[size_t(group)]);
    kvq::widen_scales(&key_scales_[size_t(group) * hd_], hd_, 1, m_.data(), s_.data());
    for (; row < end; ++row)
      kvq::read_row(rows + size_t(row) * row_bytes, hd_, bits, m_.data(), s_.data(), out + size_t(row - first) * hd_);
  }
}

namespace {
// How many rows of the quantized run, from row `first` on, query row q sees.
int rows_seen(const cpu::QueryRow& q, int sinks, int first, int count) {
  return std::min(count, q.visible - sinks - first);
}
}  // namespace

void LowBitHead::score_quantized(std::span<const cpu::QueryRow> rows) {
  if (!low(kv_.key_bits)) {  // keys kept at 16 bits: read back a tile at a time, then dot
    constexpr int kTile = 32;
    tile_.resize(std::max(tile_.size(), size_t(kTile) * hd_));
    for (int first = 0; first < quantized_; first += kTile) {
      const int count = std::min(kTile, quantized_ - first);
      read_quantized(first, count, true, tile_.data());
      for (const cpu::QueryRow& q : rows)
        for (int i = 0; i < rows_seen(q, sinks_, first, count); ++i)
          q.probs[sinks_ + first + i] = cpu::dot(q.query, &tile_[size_t(i) * hd_], hd_);
    }
    return;
  }
  // Each key group's numbers widened once, then q o s and q . m per query row.
  const int row_bytes = key_row_bytes();
  weights_.resize(size_t(hd_));
  for (int group = 0; group < groups(); ++group) {
    const int first = group_first_[size_t(group)], size = group_size_[size_t(group)];
    kvq::widen_scales(&key_scales_[size_t(group) * hd_], hd_, 1, m_.data(), s_.data());
    for (const cpu::QueryRow& q : rows) {
      const int seen = rows_seen(q, sinks_, first, size);
      if (seen <= 0) continue;
      for (int c = 0; c < hd_; ++c) weights_[size_t(c)] = q.query[c] * s_[size_t(c)];
      kvq::dot_code_rows(&quant_k_[size_t(first) * row_bytes], row_bytes, seen, hd_, kv_.key_bits, weights_.data(),
                         cpu::dot(q.query, m_.data(), hd_), q.probs + sinks_ + first);
    }
  }
}

void LowBitHead::add_quantized_values(std::span<const cpu::QueryRow> rows) {
  if (!low(kv_.value_bits)) {  // values kept at 16 bits: read back a tile at a time
    constexpr int kTile = 32;
    tile_.resize(std::max(tile_.size(), size_t(kTile) * hd_));
    for (int first = 0; first < quantized_; first += kTile) {
      const int count = std::min(kTile, quantized_ - first);
      read_quantized(first, count, false, tile_.data());
      for (const cpu::QueryRow& q : rows) {
        const int seen = rows_seen(q, sinks_, first, count);
        if (seen > 0) cpu::weighted_rows_add(q.out, q.probs + sinks_ + first, tile_.data(), seen, hd_);
      }
    }
    return;
  }
  for (const cpu::QueryRow& q : rows) {
    const int seen = rows_seen(q, sinks_, 0, quantized_);
    if (seen > 0)
      kvq::add_value_rows(quant_v_.data(), value_row_bytes(), seen, hd_, kv_.group, kv_.value_bits,
                          value_scales_.data(), q.probs + sinks_, q.out);
  }
}

void LowBitHead::cut(std::span<const int> kept) {
  const int hd = hd_;
  const int kb = key_row_bytes(), vb = value_row_bytes(), runs = hd_ / kv_.group;
  int sinks = 0, quantized = 0, residual = 0;
  std::vector<int> members(group_size_.size(), 0);
  int group = 0;
  for (const int slot : kept) {
    if (slot < sinks_) {
      ++sinks;  // sinks only move if an earlier sink went
      if (slot != sinks - 1) {
        std::memcpy(&full_k_[size_t(sinks - 1) * hd], &full_k_[size_t(slot) * hd], size_t(hd) * 2);
        std::memcpy(&full_v_[size_t(sinks - 1) * hd], &full_v_[size_t(slot) * hd], size_t(hd) * 2);
        if (rolling_) std::memcpy(&full_raw_[size_t(sinks - 1) * hd], &full_raw_[size_t(slot) * hd], size_t(hd) * 2);
      }
    } else if (slot < sinks_ + quantized_) {
      const int src = slot - sinks_, dst = quantized++;
      while (src >= group_first_[size_t(group)] + group_size_[size_t(group)]) ++group;
      ++members[size_t(group)];
      if (src != dst) {
        std::memcpy(&quant_k_[size_t(dst) * kb], &quant_k_[size_t(src) * kb], size_t(kb));
        std::memcpy(&quant_v_[size_t(dst) * vb], &quant_v_[size_t(src) * vb], size_t(vb));
        if (low(kv_.value_bits))
          std::memcpy(&value_scales_[size_t(dst) * runs], &value_scales_[size_t(src) * runs],
                      size_t(runs) * sizeof(kvq::Scale));
      }
    } else {
      const size_t src = size_t(full_row(slot)) * hd, dst = size_t(sinks + residual++) * hd;
      if (src != dst) {
        std::memmove(&full_k_[dst], &full_k_[src], size_t(hd) * 2);
        std::memmove(&full_v_[dst], &full_v_[src], size_t(hd) * 2);
        if (rolling_) std::memmove(&full_raw_[dst], &full_raw_[src], size_t(hd) * 2);
      }
    }
  }
  // Emptied groups go; the others keep their numbers.
  size_t out = 0;
  for (size_t g = 0; g < members.size(); ++g) {
    if (members[g] == 0) continue;
    if (low(kv_.key_bits) && out != g)
      std::memcpy(&key_scales_[out * hd], &key_scales_[g * hd], size_t(hd) * sizeof(kvq::Scale));
    group_size_[out++] = members[g];
  }
  group_size_.resize(out);
  sinks_ = sinks, quantized_ = quantized, residual_ = residual;
  index_groups();
}

void LowBitHead::flush() {
  if (!kv_.quantized()) return;
  const int G = kv_.group, hd = hd_;
  while (residual_ >= kv_.residual + G) {
    const size_t oldest = size_t(sinks_) * hd;  // the residual's first row
    tile_.resize(size_t(G) * hd);
    const size_t first = size_t(quantized_);
    // Keys per channel over the G tokens, as stored (f16).
    if (low(kv_.key_bits)) {
      kvq::f16_to_f32_row(&full_k_[oldest], G * hd, tile_.data());
      kvq::quantize_key_group(tile_.data(), G, hd, kv_.key_bits, &key_scales_[size_t(groups()) * hd],
                              &quant_k_[first * key_row_bytes()], key_row_bytes());
    } else {
      std::memcpy(&quant_k_[first * key_row_bytes()], &full_k_[oldest], size_t(G) * hd * 2);
    }
    // Values per token over runs of G channels.
    if (low(kv_.value_bits)) {
      kvq::f16_to_f32_row(&full_v_[oldest], G * hd, tile_.data());
      const int runs = hd / G;
      for (int t = 0; t < G; ++t)
        kvq::quantize_value_row(&tile_[size_t(t) * hd], hd, G, kv_.value_bits, &value_scales_[(first + t) * runs],
                                &quant_v_[(first + t) * value_row_bytes()]);
    } else {
      std::memcpy(&quant_v_[first * value_row_bytes()], &full_v_[oldest], size_t(G) * hd * 2);
    }
    group_size_.push_back(G);
    quantized_ += G;
    residual_ -= G;
    const size_t rest = size_t(residual_) * hd;
    std::memmove(&full_k_[oldest], &full_k_[oldest + size_t(G) * hd], rest * 2);
    std::memmove(&full_v_[oldest], &full_v_[oldest + size_t(G) * hd], rest * 2);
    index_groups();
  }
}

void LowBitHead::index_groups() {
  group_first_.resize(group_size_.size());
  int first = 0;
  for (size_t g = 0; g < group_size_.size(); ++g) {
    group_first_[g] = first;
    first += group_size_[g];
  }
}

int64_t LowBitHead::live_bytes() const {
  return low_bit_live_bytes(kv_, hd_, sinks_ + residual_, quantized_, groups());
}

int64_t LowBitHead::allocated_bytes() const {
  return int64_t(full_k_.size() + full_v_.size() + full_raw_.size()) * 2 + int64_t(quant_k_.size() + quant_v_.size()) +
         int64_t(value_scales_.size() + key_scales_.size()) * int64_t(sizeof(kvq::Scale));
}

}  // namespace h2o
