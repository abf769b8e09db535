#include "core/analysis/head_summary.h"

#include <algorithm>
#include <array>

#include "core/analysis/survival.h"

namespace h2o {

void HeadSummary::add_group(const EvictionRule& rule, std::span<const int32_t> birth,
                            const std::function<int32_t(int64_t head, int64_t i)>& step_of) {
  const int64_t first = end_, known = int64_t(birth.size());
  if ((first / kGroup) % kChunkGroups == 0) chunks_.emplace_back();
  Chunk& chunk = chunks_.back();
  const auto clamp = [](int64_t step) { return uint32_t(std::clamp<int64_t>(step, 0, kMaxStep)); };
  for (int64_t head = 0; head < heads_; ++head) {
    // Each fate's intervals come in order of their first step (births and the
    // ends of the recent window rise with the position), so one pass merges them.
    std::array<Span, kFateCount> open{};
    std::array<bool, kFateCount> any{};
    const size_t start = chunk.spans.size();
    bool cut_short = false;  // a position left while among the recent
    const auto flush = [&](int f) {
      if (any[size_t(f)]) chunk.spans.push_back(open[size_t(f)]);
      any[size_t(f)] = false;
    };
    for (int64_t i = 0; i < kGroup && first + i < known; ++i) {
      const int64_t p = first + i;
      const int32_t step = step_of(head, i);
      const int64_t later = p + rule.recent;
      const int64_t recent_end = later < known ? int64_t(birth[size_t(later)]) : kNeverStep;
      // Not settled yet: kept exactly, so that the step the head lets it go at is recorded.
      if (step < 0 || p < rule.sinks || recent_end == kNeverStep) {
        exact_[size_t(head)].push_back({int32_t(p), step});
        continue;
      }
      cut_short = cut_short || step < recent_end;
      position_fates(rule, p, birth[size_t(p)], recent_end, step, [&](Fate fate, int64_t from, int64_t to) {
        if (from >= to) return;
        const int f = int(fate);
        const uint32_t a = clamp(from), b = to == kNeverStep ? kNever : clamp(to);
        if (any[size_t(f)] && a <= open[size_t(f)].to) {
          open[size_t(f)].to = std::max(open[size_t(f)].to, b);
        } else {
          flush(f);
          open[size_t(f)] = span(fate, a, b);
          any[size_t(f)] = true;
        }
      });
    }
    for (int f = 0; f < kFateCount; ++f) flush(f);
    // The recent spans follow from the births (for_each_span) unless a position was cut short: then
    // they are kept, behind a marker.
    if (cut_short) {
      chunk.spans.insert(chunk.spans.begin() + int64_t(start), span(Fate::Unborn, 0, 0));
    } else {
      chunk.spans.erase(std::remove_if(chunk.spans.begin() + int64_t(start), chunk.spans.end(),
                                       [](const Span& sp) { return fate_of(sp) == Fate::Recent; }),
                        chunk.spans.end());
    }
    chunk.first_span.push_back(uint32_t(chunk.spans.size()));
  }
  end_ += kGroup;
  if ((end_ / kGroup) % kChunkGroups == 0) chunk.spans.shrink_to_fit();
}

const int32_t* HeadSummary::exact(int64_t head, int64_t p) const {
  const auto& list = exact_[size_t(head)];
  const auto it = first_at(list, p);
  return it != list.end() && it->position == p ? &it->step : nullptr;
}

bool HeadSummary::let_go(int64_t head, int64_t p, int32_t step) {
  auto& list = exact_[size_t(head)];
  const auto it = first_at(list, p);
  if (it == list.end() || it->position != p || it->step >= 0) return false;
  it->step = step;
  return true;
}

void HeadSummary::for_each_span(int64_t head, int64_t first, int64_t end, const EvictionRule& rule,
                                std::span<const int32_t> birth,
                                const std::function<void(int64_t, Fate, int64_t, int64_t)>& on_span) const {
  end = std::min(end, end_);
  if (first >= end) return;
  const int64_t known = int64_t(birth.size());
  const std::vector<Exact>& exact = exact_[size_t(head)];
  auto next_exact = first_at(exact, first / kGroup * kGroup);
  for (int64_t g = first / kGroup; g * kGroup < end; ++g) {
    const Chunk& chunk = chunks_[size_t(g / kChunkGroups)];
    const size_t slot = size_t((g % kChunkGroups) * heads_ + head);
    bool recent_given = false;
    for (uint32_t s = chunk.first_span[slot]; s < chunk.first_span[slot + 1]; ++s) {
      const Span& sp = chunk.spans[s];
      if (fate_of(sp) == Fate::Unborn) {
        recent_given = true;
        continue;
      }
      on_span(g * kGroup, fate_of(sp), int64_t(from_of(sp)), sp.to == kNever ? -1 : int64_t(sp.to));
    }
    // Each position the summary holds was recent from its birth to the birth `recent` places later.
    for (int64_t p = std::max<int64_t>(g * kGroup, rule.sinks); !recent_given && p < (g + 1) * kGroup; ++p) {
      while (next_exact != exact.end() && next_exact->position < p) ++next_exact;
      if (next_exact != exact.end() && next_exact->position == p) continue;  // drawn on its own
      const int64_t later = p + rule.recent;
      on_span(p, Fate::Recent, birth[size_t(p)], later < known ? int64_t(birth[size_t(later)]) : -1);
    }
  }
}

void HeadSummary::for_each_exact(int64_t head, int64_t first, int64_t end,
                                 const std::function<void(int64_t, int32_t)>& on_exact) const {
  const auto& list = exact_[size_t(head)];
  end = std::min(end, end_);
  for (auto it = first_at(list, first); it != list.end() && it->position < end; ++it) on_exact(it->position, it->step);
}

int64_t HeadSummary::bytes() const {
  int64_t b = int64_t(chunks_.capacity() * sizeof(Chunk) + exact_.capacity() * sizeof(std::vector<Exact>));
  for (const Chunk& c : chunks_) b += int64_t(c.first_span.capacity() * sizeof(uint32_t) + c.spans.capacity() * sizeof(Span));
  for (const auto& list : exact_) b += int64_t(list.capacity() * sizeof(Exact));
  return b;
}

}  // namespace h2o
