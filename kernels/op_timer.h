#pragma once
// Device time per operation of a forward pass, for h2o-bench --op-times: an
// event is recorded after each operation's launches, and after the step
// synchronises the gaps between consecutive events are added to that
// operation's total. Only eager passes are timed (a replayed graph is one
// launch), and in an eager pass the device may wait for the host's next
// launch: where kernels are shorter than a launch (tiny models) that wait
// lands on the next operation.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/device.h"

namespace H2O_KERN_NS {

struct OpTime {
  std::string op;
  int64_t launches = 0;  // marks of this operation (kernels or GEMMs)
  double ms = 0;         // device time
  int64_t bytes = 0;     // the fewest bytes the operation must move (0: not modelled)
};

class OpTimer {
 public:
  explicit OpTimer(gpu::Stream stream) : stream_(stream) {}
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  // Before the pass's first launch.
  void begin();
  // After the launches of one operation; `bytes` as in OpTime.
  void mark(const char* op, int64_t bytes = 0);
  // After the stream has synchronised: the pass's gaps added to the totals.
  void end();
  // Totals since the last reset, in the order operations were first seen.
  std::vector<OpTime> totals() const { return totals_; }
  void reset() { totals_.clear(); }

 private:
  gpu::Event event(size_t i);

  gpu::Stream stream_;
  std::vector<gpu::Event> events_;  // reused from step to step
  std::vector<std::pair<const char*, int64_t>> marks_;  // this pass's operations, after events_[0]
  std::vector<OpTime> totals_;
};

}  // namespace H2O_KERN_NS
