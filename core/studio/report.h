#pragma once
// The Markdown summary of an H2O Studio report folder: what ran (the run
// manifest of h2o::describe_run), the per-policy totals (h2o::describe_totals)
// and links to the plots and logs written beside it. Qt-free and testable.
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

namespace h2o {

struct ReportContents {
  nlohmann::json manifest;            // describe_run (or a recording's header manifest)
  nlohmann::json totals;              // describe_totals (may be null for replays without totals)
  int64_t steps = 0;
  std::string written;                // when the report was written (utc_timestamp; its folder's stamp is the same instant)
  std::vector<std::string> plots;     // file names of the images, relative to the report folder
  std::vector<std::string> logs;      // file names of the CSV/JSONL logs
  std::vector<std::string> needle;    // the needle in words (needle_report_lines); empty: none planted
};

std::string report_markdown(const ReportContents& report);

}  // namespace h2o
