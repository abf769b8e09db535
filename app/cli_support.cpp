#include "app/cli_support.h"

#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/base/format.h"
#include "core/base/json_text.h"
#include "core/base/signal_cleanup.h"
#include "core/base/version.h"
#include "core/text/token_ids.h"

namespace h2o::cli {

int interrupted_exit_code() { return stop_signal() ? 128 + stop_signal() : 0; }

std::vector<FlagPath> model_inputs(const std::string& model_flag_path, const Model& model,
                                   const std::string& tokenizer_path) {
  std::vector<FlagPath> inputs = {{"--model", model_flag_path}, {"--model", model.path}};
  std::error_code ec;
  if (std::filesystem::is_directory(model_flag_path, ec))
    for (const auto& e : std::filesystem::directory_iterator(model_flag_path, ec))
      inputs.push_back({"--model", e.path().string()});
  if (!tokenizer_path.empty()) inputs.push_back({"--tokenizer", tokenizer_path});
  return inputs;
}

SampleOutput::SampleOutput(const std::string& path) : ids_(path), manifest_(path + ".manifest.json") {}

void SampleOutput::write(const std::vector<int>& ids, const SampleRecord& record) {
  const nlohmann::json manifest = {{"program", "h2o-studio"},
                                   {"version", version()},
                                   {"command", "sample"},
                                   {"command_line", record.command_line},
                                   {"finished", utc_timestamp(std::time(nullptr))},
                                   {"model", record.model_path},
                                   {"tokenizer", record.tokenizer_path},
                                   {"ids_file", std::filesystem::path(ids_.path()).filename().string()},
                                   {"tokens_asked", record.asked},
                                   {"tokens_written", ids.size()},
                                   {"status", record.status},
                                   {"partial", record.status != "complete"}};
  ids_.stream() << token_ids_text(ids);
  manifest_.stream() << json_dump(manifest, 2) << "\n";
  ids_.finish();
  manifest_.finish();
  ids_.publish();
  manifest_.publish();
}

}  // namespace h2o::cli
