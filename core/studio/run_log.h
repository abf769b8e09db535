#pragma once
// Writes one run's telemetry into a folder, each file atomically:
//   manifest.json   what ran (model + sha256, shape, policies, sampling, backend, version) and the totals
//   steps.jsonl     one object per step and session
//   steps.csv       the same, flattened
//   evictions.csv   step, policy, layer, kv_head, position of every eviction
//                   (layer and kv_head "all" when a position left every head at once)
//   tokens.csv      forced mode: per scored token, NLL, KL to full and top-1 agreement
// Files are written under temporary names and renamed by close(); a run that
// stops early (Ctrl-C) still closes them whole. Destroyed without close(), it
// leaves nothing behind.
#include <memory>
#include <string>
#include <nlohmann/json.hpp>

#include "core/base/atomic_file.h"
#include "core/runtime/engine.h"
#include "core/studio/run_loop.h"

namespace h2o {

struct RunInfo {
  std::string command;         // "stream", "eval", ...
  std::string command_line;
  std::string model_path, tokenizer_path, prompts_path;
  bool hash_files = true;      // sha256 of model/tokenizer files in the manifest
  std::string started;         // when the run began (utc_timestamp); "" : now
};

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
  void write(const StepRecord& record) override;
  // Writes the manifest with totals and publishes every file. Throws Error.
  void close(const std::string& status = "complete");
  const std::string& dir() const { return dir_; }

 private:
  void write_evictions(int64_t step, const std::string& policy, const EvictionSummary& evictions);
  const Engine& engine_;
  std::string dir_;
  nlohmann::json manifest_;
  std::unique_ptr<AtomicFile> jsonl_, csv_, evictions_, tokens_;
  bool created_dir_ = false;
  bool closed_ = false;
};

// CSV field quoting (RFC 4180).
std::string csv_field(const std::string& s);

}  // namespace h2o
