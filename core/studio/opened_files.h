#pragma once
// What the user hands the app without a flag — files dropped onto its window,
// a file on its command line (a double-click in a file manager reaches it
// through the desktop entry's %f), a pick from the File menu's recent models —
// sorted into what the app opens. Plain C++: the window only asks.
#include <cstddef>
#include <string>
#include <vector>

namespace h2o {

enum class FileRole { Recording, Model, Tokenizer, Unknown };

// What `path` is: an H2O Studio recording by its first bytes, whatever its
// name; a model by its name (.gguf, .bin, .safetensors, config.json) or as a
// folder (a Hugging Face model's); a tokenizer (.model, tokenizer.json); else
// unknown (a missing path too).
FileRole file_role(const std::string& path);

struct OpenRequest {
  std::string recording;         // a recording to replay ("": none); then nothing else is opened
  std::string model, tokenizer;  // a live run's inputs ("": the current model / the model's own tokenizer)
  std::string problem;           // one line where some path could not be used: which, and what would be
  bool empty() const { return recording.empty() && model.empty() && tokenizer.empty(); }
};
// Several paths at once: a recording wins (the first); else the first model
// with the first tokenizer (a tokenizer alone goes with the current model).
// Paths of no use are named in `problem`, with what the app opens.
OpenRequest open_request(const std::vector<std::string>& paths);

// A model as the File menu's recent list keeps it.
struct RecentModel {
  std::string model, tokenizer;
  bool operator==(const RecentModel&) const = default;
};
// `recent` with `opened` first, no repeats, at most `keep` entries.
std::vector<RecentModel> remember_model(std::vector<RecentModel> recent, const RecentModel& opened, size_t keep = 8);

}  // namespace h2o
