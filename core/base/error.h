#pragma once
// One error type for everything that enters from outside (files, flags, prompts).
// Its message is a single line naming the file or flag and the problem, so the
// CLI can print it as is and the GUI can show it in a message box.
#include <stdexcept>
#include <string>

namespace h2o {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<what>: <problem>", the shape every input error takes.
[[noreturn]] inline void fail(const std::string& what, const std::string& problem) {
  throw Error(what + ": " + problem);
}

}  // namespace h2o
