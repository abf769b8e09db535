#pragma once
// What h2o-cli's commands share beyond flags: how a run ends on a signal,
// which files a run reads (so that no output lands on one), and the small
// manifest beside `sample`'s ids.
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/base/safe_output.h"
#include "core/model/model.h"

namespace h2o::cli {

// 128 + the signal that stopped the run (signal_cleanup.h), as a shell reports it; 0 when none.
int interrupted_exit_code();

// The files a run reads: the model (its file; every file of a model folder),
// the tokenizer and any other inputs given, each with its flag.
std::vector<FlagPath> model_inputs(const std::string& model_flag_path, const Model& model,
                                   const std::string& tokenizer_path);

// `sample`'s ids file and `<out>.manifest.json` beside it, made (as
// temporaries) before the run so that a bad path fails before any work, and
// published together: what was asked, what was written, and whether the ids
// are partial (an interrupted run keeps the ids it has, marked so).
struct SampleRecord {
  std::string command_line, model_path, tokenizer_path;
  int64_t asked = 0;
  std::string status;  // "complete" or "interrupted"
};
class SampleOutput {
 public:
  explicit SampleOutput(const std::string& path);  // throws Error naming the path
  void write(const std::vector<int>& ids, const SampleRecord& record);  // throws Error

 private:
  AtomicFile ids_, manifest_;
};

}  // namespace h2o::cli
