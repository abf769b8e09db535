#include "core/base/process_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace h2o {

namespace {
// A "Name:   12345 kB" line of /proc/self/status, in bytes.
int64_t status_bytes(const std::string& name) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name, 0) != 0) continue;
    std::istringstream fields(line.substr(name.size()));
    int64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}
}  // namespace

int64_t process_peak_rss_bytes() { return status_bytes("VmHWM:"); }

int64_t process_rss_bytes() { return status_bytes("VmRSS:"); }

}  // namespace h2o
