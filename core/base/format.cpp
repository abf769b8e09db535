#include "core/base/format.h"

#include <algorithm>
#include <cstdio>

#include "core/base/error.h"

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

std::vector<std::string> flag_list(const std::string& list, const std::string& flag, const std::string& noun) {
  std::vector<std::string> items = split_list(list);
  if (items.empty()) fail(flag, "no " + noun + " given");
  return items;
}

uint64_t parse_flag_uint(const std::string& text, const std::string& flag, uint64_t max) {
  const std::string range = "must be an integer from 0 to " + std::to_string(max) + ", got '" + text.substr(0, 40) + "'";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) fail(flag, range);
  uint64_t value = 0;
  for (char c : text) {
    const uint64_t digit = uint64_t(c - '0');
    if (value > (max - digit) / 10) fail(flag, range);
    value = value * 10 + digit;
  }
  return value;
}

std::vector<int> parse_flag_ints(const std::string& list, const std::string& flag, const std::string& noun, int min,
                                 int max) {
  std::vector<int> out;
  for (const std::string& item : flag_list(list, flag, noun)) {
    const bool negative = item[0] == '-';
    const std::string digits = negative ? item.substr(1) : item;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
      fail(flag, "'" + item.substr(0, 40) + "' is not a " + noun + " (expected integers)");
    if (negative) fail(flag, noun + " " + item + " is below " + std::to_string(min));
    if (digits.size() > 10 || std::stoll(digits) > max)
      fail(flag, noun + " " + item.substr(0, 40) + " is above " + std::to_string(max));
    const int value = int(std::stoll(digits));
    if (value < min) fail(flag, noun + " " + item + " is below " + std::to_string(min));
    out.push_back(value);
  }
  return out;
}

}  // namespace h2o
