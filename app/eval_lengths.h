#pragma once
// eval's stress test (`--lengths 1000,5000,10000`): each session's perplexity
// over the first N tokens of the text at each N, and a verdict on whether it
// stays stable as the text outgrows the model's trained context. A table on
// stdout, a CSV, and perplexity against length as PNG and PDF.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/runtime/engine.h"
#include "core/studio/scoring_meter.h"

namespace h2o::cli {

// The most tokens --lengths takes: as many as one cache may hold.
constexpr int64_t kMaxLength = int64_t(1) << 24;

// --lengths' list: integers from 2 (one token scored) to kMaxLength, each
// larger than the one before (the verdict compares every length with the
// first). Throws Error naming --lengths.
std::vector<int64_t> parse_lengths(const std::string& list);

struct LengthReport {
  const Engine& engine;
  const ScoringMeter& meter;        // measured with the lengths
  std::vector<std::string> sized_by;  // per session: the configuration or ratio that sized it, or ""
  std::string model_path;
};

void print_length_table(const LengthReport& report);
void write_length_csv(const LengthReport& report, std::ostream& csv);
// Whether this build draws plots (cairo was found when it was configured).
bool can_plot();
// The plot's PNG and PDF. Throws Error where cairo fails, or where !can_plot().
void write_length_plot(const LengthReport& report, std::ostream& png, std::ostream& pdf);

}  // namespace h2o::cli
