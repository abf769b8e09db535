#include "core/cpu/low_bit_head.h"

#include <algorithm>
#include <cstring>

#include "core/cpu/cpu_ops.h"
#include "core/model/dtype.h"
#include "core/runtime/cache_book.h"

namespace h2o {

using kvq::coded;

LowBitHead::LowBitHead(const KvPrecision& kv, int head_dim, int sinks, bool rolling)
    : shape_(low_bit_shape(kv, head_dim)),
      hd_(head_dim),
      sink_positions_(sinks),
      rolling_(rolling),
      m_(size_t(head_dim)),
      s_(size_t(head_dim)) {}

LowBitHead::Growth LowBitHead::plan(int rows, int limit) const {
  const kvq::Runs most = shape_.most_after_step(runs_, rows);
  Growth g;
  g.full = grown_capacity(full_cap_, most.f16_tokens(), limit);
  if (shape_.quantizes()) {
    g.quantized = grown_capacity(quant_cap_, most.quantized, limit);
    g.groups = grown_capacity(group_cap_, most.groups, limit, 4);
  }
  g.bytes = g.full * shape_.f16_row_bytes() * (rolling_ ? 3 : 2) + int64_t(g.quantized) * shape_.quantized_row_bytes() +
            int64_t(g.groups) * shape_.key_group_bytes();
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
    exactly(quant_k_, size_t(quant_cap_) * shape_.key_row_bytes());
    exactly(quant_v_, size_t(quant_cap_) * shape_.value_row_bytes());
    if (coded(shape_.value_bits)) exactly(value_scales_, size_t(quant_cap_) * shape_.value_runs());
  }
  if (g.groups > group_cap_) {
    group_cap_ = g.groups;
    if (coded(shape_.key_bits)) exactly(key_scales_, size_t(group_cap_) * hd_);
    group_size_.reserve(size_t(group_cap_));
    group_first_.reserve(size_t(group_cap_));
  }
}

void LowBitHead::append(const float* key, const float* raw_key, const float* value, int32_t position) {
  // A sink arrives before anything else is cached (positions ascend), so the
  // sinks stay the first run.
  const bool sink = position < sink_positions_ && runs_.quantized == 0 && runs_.residual == 0;
  const size_t row = size_t(runs_.f16_tokens()) * hd_;
  kvq::f32_to_f16_row(key, hd_, &full_k_[row]);
  kvq::f32_to_f16_row(value, hd_, &full_v_[row]);
  if (rolling_) kvq::f32_to_f16_row(raw_key, hd_, &full_raw_[row]);
  ++(sink ? runs_.sinks : runs_.residual);
}

void LowBitHead::rotate_key(int slot, const RopeAngles& angles) {
  const size_t row = size_t(runs_.full_row(slot)) * hd_;
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
    if (runs_.quantized_slot(slot)) {
      const int n = std::min(first + count, runs_.sinks + runs_.quantized) - slot;
      read_quantized(slot - runs_.sinks, n, keys, out + size_t(slot - first) * hd_);
      slot += n;
      continue;
    }
    kvq::f16_to_f32_row(&full[size_t(runs_.full_row(slot)) * hd_], hd_, out + size_t(slot - first) * hd_);
    ++slot;
  }
}

// Rows [first, first + count) of the quantized run, keys or values.
void LowBitHead::read_quantized(int first, int count, bool keys, float* out) {
  const int bits = keys ? shape_.key_bits : shape_.value_bits;
  const int row_bytes = keys ? shape_.key_row_bytes() : shape_.value_row_bytes();
  const uint8_t* rows = keys ? quant_k_.data() : quant_v_.data();
  if (!coded(bits)) {  // this half kept at 16 bits
    for (int i = 0; i < count; ++i)
      kvq::f16_to_f32_row(reinterpret_cast<const uint16_t*>(rows + size_t(first + i) * row_bytes), hd_,
                          out + size_t(i) * hd_);
    return;
  }
  if (!keys) {
    const int runs = shape_.value_runs();
    for (int i = 0; i < count; ++i) {
      const size_t row = size_t(first + i);
      kvq::read_value_row(rows + row * row_bytes, hd_, shape_.group, bits, &value_scales_[row * runs],
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
  const int sinks = runs_.sinks, quantized = runs_.quantized;
  if (!coded(shape_.key_bits)) {  // keys kept at 16 bits: read back a tile at a time, then dot
    constexpr int kTile = 32;
    tile_.resize(std::max(tile_.size(), size_t(kTile) * hd_));
    for (int first = 0; first < quantized; first += kTile) {
      const int count = std::min(kTile, quantized - first);
      read_quantized(first, count, true, tile_.data());
      for (const cpu::QueryRow& q : rows)
        for (int i = 0; i < rows_seen(q, sinks, first, count); ++i)
          q.probs[sinks + first + i] = cpu::dot(q.query, &tile_[size_t(i) * hd_], hd_);
    }
    return;
  }
  // Each key group's numbers widened once, then q o s and q . m per query row.
  const int row_bytes = shape_.key_row_bytes();
  weights_.resize(size_t(hd_));
  for (int group = 0; group < groups(); ++group) {
    const int first = group_first_[size_t(group)], size = group_size_[size_t(group)];
    kvq::widen_scales(&key_scales_[size_t(group) * hd_], hd_, 1, m_.data(), s_.data());
    for (const cpu::QueryRow& q : rows) {
      const int seen = rows_seen(q, sinks, first, size);
      if (seen <= 0) continue;
      for (int c = 0; c < hd_; ++c) weights_[size_t(c)] = q.query[c] * s_[size_t(c)];
      kvq::dot_code_rows(&quant_k_[size_t(first) * row_bytes], row_bytes, seen, hd_, shape_.key_bits, weights_.data(),
                         cpu::dot(q.query, m_.data(), hd_), q.probs + sinks + first);
    }
  }
}

void LowBitHead::add_quantized_values(std::span<const cpu::QueryRow> rows) {
  const int sinks = runs_.sinks, quantized = runs_.quantized;
  if (!coded(shape_.value_bits)) {  // values kept at 16 bits: read back a tile at a time
    constexpr int kTile = 32;
    tile_.resize(std::max(tile_.size(), size_t(kTile) * hd_));
    for (int first = 0; first < quantized; first += kTile) {
      const int count = std::min(kTile, quantized - first);
      read_quantized(first, count, false, tile_.data());
      for (const cpu::QueryRow& q : rows) {
        const int seen = rows_seen(q, sinks, first, count);
        if (seen > 0) cpu::weighted_rows_add(q.out, q.probs + sinks + first, tile_.data(), seen, hd_);
      }
    }
    return;
  }
  for (const cpu::QueryRow& q : rows) {
    const int seen = rows_seen(q, sinks, 0, quantized);
    if (seen > 0)
      kvq::add_value_rows(quant_v_.data(), shape_.value_row_bytes(), seen, hd_, shape_.group, shape_.value_bits,
                          value_scales_.data(), q.probs + sinks, q.out);
  }
}

void LowBitHead::cut(std::span<const int> kept) {
  const int hd = hd_;
  const int kb = shape_.key_row_bytes(), vb = shape_.value_row_bytes(), runs = shape_.value_runs();
  kvq::Runs after;
  std::vector<int> members(group_size_.size(), 0);
  int group = 0;
  for (const int slot : kept) {
    if (slot < runs_.sinks) {
      ++after.sinks;  // sinks only move if an earlier sink went
      if (slot != after.sinks - 1) {
        const size_t dst = size_t(after.sinks - 1) * hd, src = size_t(slot) * hd;
        std::memcpy(&full_k_[dst], &full_k_[src], size_t(hd) * 2);
        std::memcpy(&full_v_[dst], &full_v_[src], size_t(hd) * 2);
        if (rolling_) std::memcpy(&full_raw_[dst], &full_raw_[src], size_t(hd) * 2);
      }
    } else if (runs_.quantized_slot(slot)) {
      const int src = slot - runs_.sinks, dst = after.quantized++;
      while (src >= group_first_[size_t(group)] + group_size_[size_t(group)]) ++group;
      ++members[size_t(group)];
      if (src != dst) {
        std::memcpy(&quant_k_[size_t(dst) * kb], &quant_k_[size_t(src) * kb], size_t(kb));
        std::memcpy(&quant_v_[size_t(dst) * vb], &quant_v_[size_t(src) * vb], size_t(vb));
        if (coded(shape_.value_bits))
          std::memcpy(&value_scales_[size_t(dst) * runs], &value_scales_[size_t(src) * runs],
                      size_t(runs) * sizeof(kvq::Scale));
      }
    } else {
      const size_t src = size_t(runs_.full_row(slot)) * hd, dst = size_t(after.f16_tokens()) * hd;
      ++after.residual;
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
    if (coded(shape_.key_bits) && out != g)
      std::memcpy(&key_scales_[out * hd], &key_scales_[g * hd], size_t(hd) * sizeof(kvq::Scale));
    group_size_[out++] = members[g];
  }
  group_size_.resize(out);
  after.groups = int(out);
  runs_ = after;
  index_groups();
}

// Every group the rule lets go, oldest first, from the residual's rows into
// the quantized run; then the rest of the residual moves down once (as the
// device's kv_flush does).
void LowBitHead::flush() {
  const int flushed = shape_.groups_to_flush(runs_.residual);
  if (flushed == 0) return;
  const int G = shape_.group, hd = hd_;
  const int kb = shape_.key_row_bytes(), vb = shape_.value_row_bytes(), runs = shape_.value_runs();
  tile_.resize(std::max(tile_.size(), size_t(G) * hd));
  for (int f = 0; f < flushed; ++f) {
    const size_t from = size_t(runs_.sinks + f * G) * hd;  // the group's first f16 row
    const size_t row = size_t(runs_.quantized + f * G);    // and its first quantized row
    // Keys per channel over the G tokens, as stored (f16).
    if (coded(shape_.key_bits)) {
      kvq::f16_to_f32_row(&full_k_[from], G * hd, tile_.data());
      kvq::quantize_key_group(tile_.data(), G, hd, shape_.key_bits, &key_scales_[size_t(runs_.groups + f) * hd],
                              &quant_k_[row * kb], kb);
    } else {
      std::memcpy(&quant_k_[row * kb], &full_k_[from], size_t(G) * hd * 2);
    }
    // Values per token over runs of G channels.
    if (coded(shape_.value_bits)) {
      kvq::f16_to_f32_row(&full_v_[from], G * hd, tile_.data());
      for (int t = 0; t < G; ++t)
        kvq::quantize_value_row(&tile_[size_t(t) * hd], hd, G, shape_.value_bits, &value_scales_[(row + t) * runs],
                                &quant_v_[(row + t) * vb]);
    } else {
      std::memcpy(&quant_v_[row * vb], &full_v_[from], size_t(G) * hd * 2);
    }
    group_size_.push_back(G);
  }
  const size_t first = size_t(runs_.sinks) * hd, gone = size_t(flushed) * G * hd;
  const size_t rest = size_t(runs_.residual) * hd - gone;
  std::memmove(&full_k_[first], &full_k_[first + gone], rest * 2);
  std::memmove(&full_v_[first], &full_v_[first + gone], rest * 2);
  runs_ = shape_.after_flush(runs_, flushed);
  index_groups();
}

void LowBitHead::index_groups() {
  group_first_.resize(group_size_.size());
  int first = 0;
  for (size_t g = 0; g < group_size_.size(); ++g) {
    group_first_[g] = first;
    first += group_size_[g];
  }
}

int64_t LowBitHead::live_bytes() const { return shape_.live_bytes(runs_); }

int64_t LowBitHead::allocated_bytes() const {
  return int64_t(full_k_.size() + full_v_.size() + full_raw_.size()) * 2 + int64_t(quant_k_.size() + quant_v_.size()) +
         int64_t(value_scales_.size() + key_scales_.size()) * int64_t(sizeof(kvq::Scale));
}

}  // namespace h2o
