#pragma once
// The sessions of a table-driven command (eval, needle): the full cache, then
// every policy at every budget, ratio, configuration and KV precision the
// flags ask for, each with what sized it.
#include <cstdint>
#include <string>
#include <vector>

#include "app/cli_command.h"

namespace h2o::cli {

// One session of the table: its policy, and the ratio or configuration name
// that sized it ("" for an absolute budget).
struct PolicyRow {
  PolicyConfig policy;
  std::string sized_by;
};

// Ratios are fractions of `scored` tokens (eval's scored count); a command
// without the ratio flags has none.
std::vector<PolicyRow> policy_rows(const Flags& f, const PolicyRowFlags& rows, int64_t scored);

// A row's budget column ("all" for the full cache) and KV precision column
// ("f32" or "native": the backend's own; else the quantized label, "k4v4 g32 r64").
std::string budget_column(const PolicyConfig& policy);
std::string kv_column(const PolicyConfig& policy, const std::string& backend_name);

// The KV precisions of the rows (--kv-sweep, else --kv-bits, else the backend's own).
std::vector<KvPrecision> row_precisions(const Flags& f, const PolicyRowFlags& rows);

}  // namespace h2o::cli
