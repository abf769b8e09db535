#include "core/studio/report.h"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace h2o {
using nlohmann::json;

static std::string number(const json& j, int precision = 3) {
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (j.is_number()) {
    const double v = j.get<double>();
    if (std::isnan(v)) return "–";
    std::ostringstream s;
    s << std::fixed << std::setprecision(precision) << v;
    return s.str();
  }
  if (j.is_string()) return j.get<std::string>();
  return j.is_null() ? "–" : j.dump();
}

static std::string at(const json& j, const char* key) { return j.contains(key) ? number(j[key]) : "–"; }

std::string report_markdown(const ReportContents& r) {
  std::ostringstream md;
  const json& m = r.manifest;
  md << "# H2O Studio run report\n\n";
  if (m.contains("model")) {
    const json& model = m["model"];
    md << "- **Model**: `" << model.value("path", "?") << "` (" << model.value("format", "?") << ", "
       << at(model, "n_layers") << " layers, " << at(model, "n_heads") << " heads, " << at(model, "n_kv_heads")
       << " KV heads, context " << at(model, "max_seq_len") << ")\n";
  }
  if (m.contains("tokenizer")) md << "- **Tokenizer**: " << m["tokenizer"].value("describe", "?") << "\n";
  if (m.contains("backend")) md << "- **Backend**: " << m["backend"].value("describe", "?") << "\n";
  if (m.contains("prompts")) md << "- **Prompts**: `" << number(m["prompts"]) << "`\n";
  if (m.contains("sampling")) {
    const json& s = m["sampling"];
    md << "- **Sampling**: " << (s.value("greedy", true) ? "greedy" : "temperature " + at(s, "temperature"))
       << ", seed " << at(s, "seed") << "\n";
  }
  md << "- **Steps**: " << r.steps << "\n";
  // One instant per event, the same in every file: the run's start (as manifest.json says) and the report's writing.
  if (m.contains("started")) md << "- **Run started**: " << number(m["started"]) << "\n";
  if (!r.written.empty()) md << "- **Report written**: " << r.written << "\n";
  if (m.contains("mode")) md << "- **Mode**: " << number(m["mode"]) << "\n";
  if (m.contains("version")) md << "- **Program**: h2o-studio " << number(m["version"]) << "\n";
  md << "\n## Policies\n\n| policy | generated | cached tokens | KV live bytes | decode tok/s | prefill tok/s | perplexity | top-1 agreement | mean KL |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  if (r.totals.is_array()) {
    for (const json& t : r.totals)
      md << "| " << t.value("policy", "?") << " | " << at(t, "generated_tokens") << " | " << at(t, "cached_tokens")
         << " | " << at(t, "kv_live_bytes") << " | " << at(t, "decode_tokens_per_s") << " | "
         << at(t, "prefill_tokens_per_s") << " | " << at(t, "perplexity") << " | " << at(t, "top1_agreement")
         << " | " << at(t, "mean_kl_vs_full") << " |\n";
  } else {
    md << "| (no totals recorded) | | | | | | | | |\n";
  }
  if (!r.needle.empty()) {
    md << "\n## The needle\n\n";
    for (const std::string& line : r.needle) md << "- " << line << "\n";
  }
  if (!r.plots.empty()) {
    md << "\n## Plots\n\n";
    for (const auto& p : r.plots)
      if (p.size() > 4 && p.compare(p.size() - 4, 4, ".png") == 0) md << "![" << p << "](" << p << ")\n\n";
    bool first = true;
    for (const auto& p : r.plots)
      if (p.size() <= 4 || p.compare(p.size() - 4, 4, ".png") != 0) {
        md << (first ? "Vector versions (PDF, SVG): " : ", ") << "[" << p << "](" << p << ")";
        first = false;
      }
    if (!first) md << "\n";
  }
  if (!r.logs.empty()) {
    md << "\n## Logs\n\n";
    for (const auto& l : r.logs) md << "- [" << l << "](" << l << ")\n";
  }
  md << "\n## Manifest\n\n```json\n" << m.dump(2, ' ', false, json::error_handler_t::replace) << "\n```\n";
  return md.str();
}

}  // namespace h2o
