#pragma once
// How sizes and instants are written for people and for file names: one
// formatter each, so the CLI, the logs, the reports and the app agree; and
// how a flag's comma-separated list is read.
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

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

}  // namespace h2o
