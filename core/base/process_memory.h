#pragma once
// How much memory this process has held: eval reports it beside the KV bytes
// it books itself, since the weights, scratch and allocator overhead count too.
#include <cstdint>

namespace h2o {

// The resident set's high-water mark of the whole process so far (VmHWM in
// /proc/self/status), bytes; 0 where the system does not say (not Linux).
int64_t process_peak_rss_bytes();
// The resident set now (VmRSS), bytes; 0 where the system does not say.
int64_t process_rss_bytes();

}  // namespace h2o
