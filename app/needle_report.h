#pragma once
// What h2o-cli needle writes of a grid (SEMANTICS.md, "Needles": the
// reports): needle.csv (a row per length, depth and session), needle_heads.csv
// (a row per ... and (layer, KV head)), a Markdown summary on stdout, and per
// session three heatmaps: survival at the question and the answer's NLL over
// depth x length (the trained context marked), and what each layer and KV
// head held of the needle.
#include <ostream>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/needle/needle_grid.h"

namespace h2o::cli {

struct NeedleReport {
  const NeedleGridSpec& spec;
  const NeedleGrid& grid;
  const ModelConfig& model;
  std::string backend;  // the backend's name: the KV column's "f32" / "native"
};

void write_needle_csv(const NeedleReport& report, std::ostream& csv);
void write_needle_heads_csv(const NeedleReport& report, std::ostream& csv);
// One row per session and length, averaged over the depths.
void print_needle_table(const NeedleReport& report, std::ostream& out);

// The plots' files of one session: its name stem and each plot's PNG and PDF bytes.
struct NeedlePlot {
  std::string file;  // "needle-03-h2o-b64-survival" (without extension)
  std::string png, pdf;
};
// Every session's plots (this build's cairo; call only where can_plot()).
std::vector<NeedlePlot> needle_plots(const NeedleReport& report);

}  // namespace h2o::cli
