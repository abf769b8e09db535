#include "core/base/process_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace h2o {

int64_t process_peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    int64_t kib = 0;
    fields >> kib;  // "VmHWM:   12345 kB"
    return kib * 1024;
  }
  return 0;
}

}  // namespace h2o
