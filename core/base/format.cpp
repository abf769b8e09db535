#include "core/base/format.h"

#include <algorithm>
#include <cstdio>

namespace h2o {

std::string format_mib(int64_t bytes, int decimals) {
  if (decimals < 0) decimals = bytes < (int64_t(1) << 20) ? 3 : 1;
  char text[48];
  std::snprintf(text, sizeof text, "%.*f MiB", decimals, double(bytes) / 1048576.0);
  return text;
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  if (bytes < (int64_t(1) << 20)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f KiB", double(bytes) / 1024.0);
    return text;
  }
  return format_mib(bytes, 2);
}

static std::string utc(std::time_t t, const char* pattern) {
  std::tm parts{};
  gmtime_r(&t, &parts);
  char text[32];
  std::strftime(text, sizeof text, pattern, &parts);
  return text;
}

std::string utc_timestamp(std::time_t t) { return utc(t, "%Y-%m-%dT%H:%M:%SZ"); }
std::string file_stamp(std::time_t t) { return utc(t, "%Y%m%d-%H%M%S"); }

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    if (end > begin) out.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

}  // namespace h2o
