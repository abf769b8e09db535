#pragma once
// eval's table, one row per session: perplexity and fidelity to the full
// cache (SEMANTICS.md "Numbers we report"), how fast each session scored and
// the most KV memory it held; as Markdown on stdout and as CSV.
#include <ostream>
#include <string>
#include <vector>

#include "core/runtime/engine.h"
#include "core/studio/scoring_meter.h"

namespace h2o::cli {

// `sized_by[i]`: the ratio or configuration name that sized session i ("" for an absolute budget).
void print_eval_table(const Engine& engine, const ScoringMeter& meter, const std::vector<std::string>& sized_by,
                      const std::string& model_path, std::ostream& csv);

}  // namespace h2o::cli
