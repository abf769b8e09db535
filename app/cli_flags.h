#pragma once
// The table's flags (core/flags/run_flags.h) on a CLI11 command: the help
// `taker` shows, and a value checked against the table's bounds or choices,
// so h2o-cli, h2o-bench and h2o-bench-studio refuse what the app refuses.
#include <CLI/CLI.hpp>
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

}  // namespace h2o::cli
