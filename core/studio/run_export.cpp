#include "core/studio/run_export.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/studio/report.h"

namespace h2o {

RunInfo studio_run_info(const StudioConfig& config, const StudioInputs& inputs, bool hash_files) {
  RunInfo info;
  info.command = config.forced ? "eval" : "stream";  // RunLog adds tokens.csv for eval
  info.command_line = "h2o-studio";
  info.model_path = inputs.model_path;
  info.tokenizer_path = inputs.tokenizer_path;
  info.prompts_path = config.forced ? config.forced_text : config.prompts;
  info.hash_files = hash_files;
  return info;
}

namespace {

// The recording's first line with the view a replay opens on set to (layer, head).
std::string with_view(const std::string& first_line, int layer, int head) {
  if (layer < 0) return first_line;
  nlohmann::json j = nlohmann::json::parse(first_line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("header") || !j["header"].is_object()) return first_line;
  j["header"]["view"] = {{"layer", layer}, {"head", head}};
  return json_dump(j);
}

}  // namespace

void RunExport::write_recording(const std::string& path) const {
  if (!replay && !spool) throw Error("nothing to save: no run yet");
  if (spool && !replay) spool->flush();
  std::ifstream in(recording, std::ios::binary);
  std::string first;
  if (!std::getline(in, first)) throw Error(recording + ": cannot read the recording");
  AtomicFile out(path, std::ios::out | std::ios::trunc | std::ios::binary);
  out.stream() << with_view(first, view_layer, view_head) << '\n';
  out.stream() << in.rdbuf();  // the steps as they were recorded
  // The engine's totals cover every step: they belong only to a whole recording (not stopped, its ring never turned).
  if (engine && !replay && !spool->stopped() && spool->turns() == 0)
    out.stream() << json_dump(nlohmann::json{{"totals", describe_totals(*engine)}}) << '\n';
  out.commit();
}

void RunExport::write_logs(const std::string& dir) const {
  if (!engine || !spool) throw Error("logs are written from a live run (a replay's recording already holds them)");
  spool->flush();
  RunInfo run = info;
  // One instant for the run's start everywhere: the manifest the run began with.
  run.started = manifest ? manifest->value("started", "") : "";
  RunLog log(dir, *engine, run);
  RecordingReader steps_so_far(recording);
  while (auto record = steps_so_far.next()) log.write(*record);
  const std::string kept = spool->turns() ? "steps from " + std::to_string(spool->first_step()) + " (the recording keeps its newest); " : "";
  log.close(spool->stopped() ? kept + "recorded up to step " + std::to_string(spool->last_step()) + " of " +
                                   std::to_string(engine->steps() - 1)
                             : kept + state);
}

void RunExport::write_report(const std::string& staging, const std::string& dir, const std::vector<std::string>& plots,
                             const std::string& written) const {
  namespace fs = std::filesystem;
  try {
    ReportContents report;
    if (manifest) report.manifest = *manifest;
    report.steps = steps;
    report.written = written;
    report.plots = plots;
    report.needle = needle;
    if (engine) {
      write_logs(staging);
      report.totals = describe_totals(*engine);
      report.logs = {"manifest.json", "steps.csv", "steps.jsonl", "evictions.csv"};
    } else if (replay) {
      report.totals = replay->totals();
    }
    write_recording(staging + "/run.h2orec.jsonl");
    report.logs.push_back("run.h2orec.jsonl");
    write_file_atomic(staging + "/summary.md", report_markdown(report));
    fs::rename(staging, dir);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
}

}  // namespace h2o
