#pragma once
// A model's load with a progress line on a terminal: a synthetic Llama-2-7B's
// weights take minutes on a small machine, and a command that says nothing for
// that long looks hung. A file is mapped and reports nothing (load_model).
#include <memory>
#include <string>

#include "core/model/model.h"

namespace h2o::cli {

// load_model(path) with "<path>: making weights 37 %" on stderr, rewritten in
// place four times a second at most, then left as one line with the time; only
// on a terminal (a log gets nothing: its readers want the results).
std::shared_ptr<const Model> load_model_with_progress(const std::string& path);

}  // namespace h2o::cli
