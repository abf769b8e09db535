#pragma once
// Writes one run's telemetry into a folder, each file atomically:
//   manifest.json   what ran (model + sha256, shape, policies, sampling, backend, version) and the totals
//   steps.jsonl     one object per step and session
//   steps.csv       the same, flattened
//   evictions.csv   step, policy, layer, kv_head, position of every eviction
//                   (layer and kv_head "all" when a position left every head at once)
//   tokens.csv      forced mode: per scored token, NLL, KL to full and top-1 agreement
// Files are written under temporary names and renamed by close(), all or
// none (a full disk publishes nothing); a run that stops early (Ctrl-C) still
// closes them whole, its manifest saying "partial": true. The folder is held
// (safe_output.h's RunFolder) while the log is open. Destroyed without
// close(), it leaves nothing behind.
#include <memory>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/base/run_files.h"
#include "core/runtime/engine.h"
#include "core/runtime/run_loop.h"

namespace h2o {

struct RunInfo {
  std::string command;         // "stream", "eval", ...
  std::string command_line;
  std::string model_path, tokenizer_path, prompts_path;
  bool hash_files = true;      // sha256 of model/tokenizer files in the manifest
  std::string started;         // when the run began (utc_timestamp); "" : now
  bool fresh_folder = false;   // refuse a folder that already holds files (the CLI); else write into it
};

// A model's part of a manifest: its file, format, weight type and shape (and sha256 with `hash_file`).
nlohmann::json describe_model(const Model& model, bool hash_file);
// The manifest's description of an engine and its inputs (no totals).
nlohmann::json describe_run(const Engine& engine, const RunInfo& info);
// Per-policy totals of a finished (or interrupted) run.
nlohmann::json describe_totals(const Engine& engine);

class RunLog final : public StepSink {
 public:
  RunLog(const std::string& dir, const Engine& engine, const RunInfo& info);
  ~RunLog() override;
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;
  // Throws Error once a file cannot be written (a full disk).
  void write(const StepRecord& record) override;
  // One more file (eval's table), published with the logs by close().
  std::ostream& add_output(const std::string& path);
  // Writes the manifest with totals and publishes every file, or none. Any
  // status but "complete" marks the logs partial. Throws Error.
  void close(const std::string& status = "complete");
  const std::string& dir() const { return dir_; }

 private:
  void write_evictions(int64_t step, const std::string& policy, const EvictionSummary& evictions);
  RunFiles files_;
  const Engine& engine_;
  std::string dir_;
  nlohmann::json manifest_;
  std::ostream *jsonl_ = nullptr, *csv_ = nullptr, *evictions_ = nullptr, *tokens_ = nullptr;
};

// CSV field quoting (RFC 4180).
std::string csv_field(const std::string& s);

}  // namespace h2o
