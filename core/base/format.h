#pragma once
// How sizes and instants are written for people and for file names: one
// formatter each, so the CLI, the logs, the reports and the app agree; and
// how a flag's comma-separated list is read.
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>
// (parse_* throw h2o::Error.)

namespace h2o {

// "0.840 MiB", "18.0 MiB": three decimals below 1 MiB, one above, or `decimals`.
std::string format_mib(int64_t bytes, int decimals = -1);
// The short form for panes and status lines: "512 B", "1.5 KiB", "3.38 MiB".
std::string format_bytes(int64_t bytes);

// The instant `t` in UTC as ISO 8601 ("2026-11-23T16:00:00Z"): manifests, reports.
std::string utc_timestamp(std::time_t t);
// The same instant as a file-name stamp ("20261123-160000", UTC): run and report folders.
std::string file_stamp(std::time_t t);

// The non-empty items of a comma-separated list: "full,,h2o" -> {"full", "h2o"}.
std::vector<std::string> split_list(const std::string& list);
// A flag's list as split_list gives it, refused when it holds nothing ("", ","):
// Error("<flag>: no <noun> given").
std::vector<std::string> flag_list(const std::string& list, const std::string& flag, const std::string& noun);

// A flag's unsigned decimal integer in [0, max]: digits only (no sign, no
// space). Throws Error("<flag>: must be an integer from 0 to <max>, got '<text>'").
uint64_t parse_flag_uint(const std::string& text, const std::string& flag, uint64_t max);
// A comma-separated list of integers in [min, max] (min >= 0), each called `noun`
// in errors ("budget 0 is below 1", "budget 99999999999 is above 16777216").
std::vector<int> parse_flag_ints(const std::string& list, const std::string& flag, const std::string& noun, int min,
                                 int max);

}  // namespace h2o
