#include "core/studio/opened_files.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace h2o {
namespace fs = std::filesystem;

namespace {

// The first bytes every recording's header line begins with (core/studio/recording.cpp writes
// its keys sorted, "format" first); the MIME type's magic (resources/packaging) is the same.
constexpr std::string_view kRecordingStart = R"({"format":"h2o-studio-recording")";

bool starts_as_recording(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kRecordingStart.size(), '\0');
  in.read(head.data(), std::streamsize(head.size()));
  return in.gcount() == std::streamsize(head.size()) && head == kRecordingStart;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

FileRole file_role(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return FileRole::Model;
  if (!fs::is_regular_file(p, ec)) return FileRole::Unknown;
  if (starts_as_recording(p)) return FileRole::Recording;
  const std::string name = lower(p.filename().string()), ext = lower(p.extension().string());
  if (ext == ".gguf" || ext == ".bin" || ext == ".safetensors" || name == "config.json") return FileRole::Model;
  if (ext == ".model" || name == "tokenizer.json") return FileRole::Tokenizer;
  return FileRole::Unknown;
}

OpenRequest open_request(const std::vector<std::string>& paths) {
  OpenRequest r;
  std::vector<std::string> unused;
  for (const std::string& path : paths) {
    std::string* slot = nullptr;
    switch (file_role(path)) {
      case FileRole::Recording: slot = &r.recording; break;
      case FileRole::Model: slot = &r.model; break;
      case FileRole::Tokenizer: slot = &r.tokenizer; break;
      case FileRole::Unknown: break;
    }
    if (!slot) unused.push_back(path);
    else if (slot->empty()) *slot = path;
  }
  if (!r.recording.empty()) {  // a replay needs no model
    r.model.clear();
    r.tokenizer.clear();
  }
  if (!unused.empty()) {
    std::error_code ec;
    const std::string& first = unused.front();
    r.problem = first + (fs::exists(first, ec) ? ": not a model, tokenizer or recording" : ": no such file or folder") +
                (unused.size() > 1 ? " (and " + std::to_string(unused.size() - 1) + " more)" : "") +
                " — open a model (.gguf, llama2.c .bin, .safetensors, config.json or its folder), a tokenizer "
                "(.model, tokenizer.json) or a recording (.h2orec.jsonl)";
  }
  return r;
}

std::vector<RecentModel> remember_model(std::vector<RecentModel> recent, const RecentModel& opened, size_t keep) {
  std::erase(recent, opened);
  recent.insert(recent.begin(), opened);
  if (recent.size() > keep) recent.resize(keep);
  return recent;
}

}  // namespace h2o
