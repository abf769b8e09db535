#include "core/analysis/head_evictions.h"

#include <algorithm>

namespace h2o {

HeadEvictions::HeadEvictions(int layers, int kv_heads, int64_t exact_positions)
    : heads_(int64_t(layers) * kv_heads),
      kv_heads_(kv_heads),
      exact_positions_(std::max<int64_t>(exact_positions, kBlock)),
      summary_(heads_) {}

void HeadEvictions::add_position() {
  if ((length_ - base_) % kBlock == 0) {
    blocks_.emplace_back(new uint16_t[size_t(heads_ * kBlock)]);
    std::fill_n(blocks_.back().get(), size_t(heads_ * kBlock), kHeld);
  }
  ++length_;
}

void HeadEvictions::summarise_old(const EvictionRule& rule, std::span<const int32_t> birth) {
  while (length_ - base_ >= exact_positions_ + kBlock) summarise_block(rule, birth);
}

void HeadEvictions::summarise_block(const EvictionRule& rule, std::span<const int32_t> birth) {
  for (int64_t first = base_; first < base_ + kBlock; first += HeadSummary::kGroup)
    summary_.add_group(rule, birth, [&](int64_t head, int64_t i) {
      return exact_step(head, first + i, birth[size_t(first + i)]);
    });
  base_ += kBlock;
  blocks_.erase(blocks_.begin());
  std::erase_if(far_, [&](const auto& entry) { return far_position(entry.first) < base_; });
}

int32_t HeadEvictions::exact_step(int64_t head, int64_t p, int32_t birth) const {
  const uint16_t c = *codes(head, p);
  if (c == kHeld) return -1;
  if (c == kFar) return birth + far_.at(far_key(head, p));
  return birth + int32_t(c);
}

bool HeadEvictions::let_go(int layer, int kv, int64_t p, int32_t birth, int32_t step) {
  const int64_t head = int64_t(layer) * kv_heads_ + kv;
  if (p < base_) return summary_.let_go(head, p, step);
  uint16_t& c = *codes(head, p);
  if (c != kHeld) return false;
  const int64_t age = std::max<int64_t>(0, int64_t(step) - birth);
  if (age < kFar) {
    c = uint16_t(age);
  } else {
    c = kFar;
    far_[far_key(head, p)] = int32_t(age);
  }
  return true;
}

int32_t HeadEvictions::at(int layer, int kv, int64_t p, int32_t birth) const {
  const int64_t head = int64_t(layer) * kv_heads_ + kv;
  if (p < base_) {
    const int32_t* exact = summary_.exact(head, p);
    return exact ? *exact : kSummarised;
  }
  return exact_step(head, p, birth);
}

std::vector<int32_t> HeadEvictions::column(int layer, int kv, std::span<const int32_t> birth,
                                           std::span<const int32_t> summarised) const {
  const int64_t head = int64_t(layer) * kv_heads_ + kv;
  std::vector<int32_t> out(static_cast<size_t>(length_));
  for (int64_t p = 0; p < base_; ++p) out[size_t(p)] = p < int64_t(summarised.size()) ? summarised[size_t(p)] : kSummarised;
  summary_.for_each_exact(head, 0, base_, [&](int64_t p, int32_t step) { out[size_t(p)] = step; });
  for (int64_t first = base_; first < length_; first += kBlock) {
    const uint16_t* block = codes(head, first);
    const int64_t n = std::min(kBlock, length_ - first);
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t c = block[i];
      const int32_t b = birth[size_t(first + i)];
      out[size_t(first + i)] = c == kHeld ? -1 : c == kFar ? b + far_.at(far_key(head, first + i)) : b + int32_t(c);
    }
  }
  return out;
}

int64_t HeadEvictions::bytes() const {
  // An unordered_map node: the pair, the next pointer and the cached hash, plus its bucket.
  return int64_t(blocks_.size()) * heads_ * kBlock * 2 + int64_t(blocks_.capacity() * sizeof(void*)) +
         int64_t(far_.size()) * 32 + int64_t(far_.bucket_count() * sizeof(void*)) + summary_.bytes();
}

}  // namespace h2o
