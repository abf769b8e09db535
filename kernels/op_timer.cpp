#include "kernels/op_timer.h"

#include <algorithm>

namespace H2O_KERN_NS {

OpTimer::~OpTimer() {
  for (gpu::Event e : events_) gpu::destroy_event(e);
}

gpu::Event OpTimer::event(size_t i) {
  while (events_.size() <= i) events_.push_back(gpu::create_event());
  return events_[i];
}

void OpTimer::begin() {
  marks_.clear();
  gpu::record(event(0), stream_);
}

void OpTimer::mark(const char* op, int64_t bytes) {
  marks_.emplace_back(op, bytes);
  gpu::record(event(marks_.size()), stream_);
}

void OpTimer::end() {
  for (size_t i = 0; i < marks_.size(); ++i) {
    const char* op = marks_[i].first;  // not a structured binding: clang 14 cannot capture one
    const int64_t bytes = marks_[i].second;
    auto it = std::find_if(totals_.begin(), totals_.end(), [op](const OpTime& t) { return t.op == op; });
    if (it == totals_.end()) it = totals_.insert(totals_.end(), OpTime{op});
    it->launches += 1;
    it->ms += double(gpu::elapsed_ms(events_[i], events_[i + 1]));
    it->bytes += bytes;
  }
  marks_.clear();
}

}  // namespace H2O_KERN_NS
