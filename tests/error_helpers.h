#pragma once
// The message of the h2o::Error a call throws, and the one-line-naming check
// every bad-input test makes.
#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"

namespace h2o::test {

// The message of the Error that `f` throws; fails the test if it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no h2o::Error thrown";
  return "";
}

// One line that names `name` (a file, a key) and says `problem`.
inline void expect_one_line(const std::string& message, const std::string& name, const std::string& problem = "") {
  EXPECT_NE(message.find(name), std::string::npos) << "does not name " << name << ": " << message;
  EXPECT_NE(message.find(problem), std::string::npos) << "does not say " << problem << ": " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace h2o::test
