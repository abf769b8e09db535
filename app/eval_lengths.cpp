#include "app/eval_lengths.h"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "core/base/error.h"
#include "core/base/format.h"
#include "core/studio/run_log.h"
#ifdef H2O_WITH_PLOT
#include "app/line_plot.h"
#endif

namespace h2o::cli {
namespace {

std::vector<std::optional<SessionMeasure>> points_of(const LengthReport& r, size_t session) {
  std::vector<std::optional<SessionMeasure>> points;
  for (size_t k = 0; k < r.meter.lengths().size(); ++k) points.push_back(r.meter.at_length(session, k));
  return points;
}

}  // namespace

std::vector<int64_t> parse_lengths(const std::string& list) {
  std::vector<int64_t> lengths;
  for (int n : parse_flag_ints(list, "--lengths", "length", 2, int(kMaxLength))) {
    if (!lengths.empty() && n <= lengths.back())
      fail("--lengths", "lengths must increase (the verdict compares each with the first): " + std::to_string(n) +
                            " comes after " + std::to_string(lengths.back()));
    lengths.push_back(n);
  }
  return lengths;
}

void print_length_table(const LengthReport& r) {
  const std::vector<int64_t>& lengths = r.meter.lengths();
  const std::ios::fmtflags flags = std::cout.flags();
  const std::streamsize precision = std::cout.precision();
  std::cout << "\nPerplexity over the first N tokens; stable: none above " << kStableFactor
            << "x its value at the first length (trained context " << r.engine.model().config.max_seq_len
            << " tokens).\n\n| sized by | policy |";
  for (int64_t n : lengths) std::cout << " N = " << n << " |";
  std::cout << " peak KV at N = " << lengths.back() << " | verdict |\n|---|---|";
  for (size_t k = 0; k <= lengths.size(); ++k) std::cout << "---:|";
  std::cout << "---|\n";
  for (size_t i = 0; i < r.engine.sessions().size(); ++i) {
    const auto points = points_of(r, i);
    std::cout << "| " << r.sized_by[i] << " | " << r.engine.sessions()[i]->policy().describe() << " |";
    for (const auto& p : points)
      if (p) std::cout << ' ' << std::fixed << std::setprecision(2) << p->perplexity() << " |";
      else std::cout << " — |";
    std::cout << ' ' << (points.back() ? format_mib(points.back()->peak_kv_live_bytes) : "—") << " | "
              << length_verdict(points) << " |\n";
  }
  std::cout.flags(flags);
  std::cout.precision(precision);
}

// One row per session and length reached; a length not reached has no row.
void write_length_csv(const LengthReport& r, std::ostream& csv) {
  csv << "model,policy,sized_by,length,scored,perplexity,tokens_per_s,peak_kv_live_bytes,peak_kv_allocated_bytes,"
         "process_peak_rss_bytes,verdict\n";
  for (size_t i = 0; i < r.engine.sessions().size(); ++i) {
    const auto points = points_of(r, i);
    const std::string verdict = length_verdict(points);
    for (size_t k = 0; k < points.size(); ++k) {
      if (!points[k]) continue;
      const SessionMeasure& m = *points[k];
      csv << csv_field(r.model_path) << ',' << csv_field(r.engine.sessions()[i]->policy().describe()) << ','
          << csv_field(r.sized_by[i]) << ',' << r.meter.lengths()[k] << ',' << m.scored << ',' << m.perplexity()
          << ',' << m.tokens_per_s() << ',' << m.peak_kv_live_bytes << ',' << m.peak_kv_allocated_bytes << ','
          << m.process_peak_rss_bytes << ',' << csv_field(verdict) << '\n';
    }
  }
}

#ifdef H2O_WITH_PLOT
namespace {

// A session's name in the plot's legend: its configuration name where one
// sized it (what the reader asked for), else its policy.
std::string session_name(const LengthReport& r, size_t i) {
  return r.sized_by[i].empty() ? r.engine.sessions()[i]->policy().describe() : r.sized_by[i];
}

}  // namespace

bool can_plot() { return true; }

void write_length_plot(const LengthReport& r, std::ostream& png, std::ostream& pdf) {
  const std::vector<int64_t>& lengths = r.meter.lengths();
  LinePlot plot;
  plot.title = "Perplexity against length: " + std::filesystem::path(r.model_path).filename().string() +
               " (trained context " + std::to_string(r.engine.model().config.max_seq_len) + ")";
  // A log x axis where the lengths span a decade or more, so the short ones do not crowd together.
  plot.log_x = double(lengths.back()) >= 10.0 * double(lengths.front());
  plot.x_title = std::string("N: the first N tokens of the text, scored teacher-forced") +
                 (plot.log_x ? " (log scale)" : "");
  plot.y_title = "perplexity (log scale)";
  plot.log_y = true;
  for (size_t i = 0; i < r.engine.sessions().size(); ++i) {
    PlotLine& line = plot.lines.emplace_back();
    line.name = session_name(r, i);
    for (size_t k = 0; k < lengths.size(); ++k) {
      line.x.push_back(double(lengths[k]));
      line.y.push_back(r.meter.at_length(i, k) ? r.meter.at_length(i, k)->perplexity() : NAN);
    }
  }
  png << plot_png(plot);
  pdf << plot_pdf(plot);
}
#else
bool can_plot() { return false; }

void write_length_plot(const LengthReport&, std::ostream&, std::ostream&) {
  throw Error("plot: this h2o-cli was built without cairo (libcairo2-dev)");
}
#endif

}  // namespace h2o::cli
