#pragma once
// A whole text file in memory (teacher-forced texts, eval texts).
#include <string>

namespace h2o {

// Throws Error("<path>: cannot open the text file: <reason>").
std::string read_text_file(const std::string& path);

}  // namespace h2o
