#pragma once
// The table's flags (core/flags/run_flags.h) on a CLI11 command: the help
// `taker` shows, and a value checked against the table's bounds or choices,
// so h2o-cli, h2o-bench and h2o-bench-studio refuse what the app refuses.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/flags/run_flags.h"

namespace h2o::cli {

template <class T>
CLI::Option* add_table_flag(CLI::App* command, std::string_view name, T& value, FlagTaker taker) {
  const RunFlag& flag = run_flag(name);
  if constexpr (std::is_same_v<T, bool>) {
    return command->add_flag("--" + flag.name, value, flag_help(flag, taker));
  } else {
    CLI::Option* option = command->add_option("--" + flag.name, value, flag_help(flag, taker));
    if (flag.kind == FlagKind::Int || flag.kind == FlagKind::Choice)
      option->check(CLI::Validator([&flag](std::string& text) { return flag_problem(flag, text); }, "", ""));
    return option;
  }
}

// A program's own whole-number flag (one the run's table does not hold: a benchmark's --steps),
// checked as the table's are: digits only (not 0x10, not 1e3), within [lo, hi], refused in the
// table's words ("--steps: expected a whole number from 1 to 10000000, got 'abc'").
template <class T>
CLI::Option* add_whole_flag(CLI::App* command, const std::string& name, T& value, int64_t lo, int64_t hi,
                            const std::string& help) {
  RunFlag flag;
  flag.name = name;
  flag.kind = FlagKind::Int;
  flag.lo = lo;
  flag.hi = hi;
  return command->add_option("--" + name, value, help)
      ->check(CLI::Validator([flag](std::string& text) { return flag_problem(flag, text); }, "", ""));
}

// Flag errors (an unknown flag, a value refused) as every other input error: one line that names
// the program, where CLI11's default adds a second and a usage line.
inline void one_line_flag_errors(CLI::App& app, const std::string& program) {
  app.failure_message([program](const CLI::App*, const CLI::Error& e) {
    std::string text = e.what();
    std::replace(text.begin(), text.end(), '\n', ' ');
    return program + ": " + text + " (see --help)\n";
  });
}

}  // namespace h2o::cli
