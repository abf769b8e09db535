#include "app/bench_op_times.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "core/backends/op_timing.h"

namespace h2o {
namespace {

// One configuration's totals per operation, each divided by the steps it ran.
struct PerStep {
  std::vector<CudaOpTime> ops;
  double step_ms = 0;
};

PerStep time_ops(Backend& backend, const OpTimedRun& r) {
  // Switching on starts the totals from zero: only the decode steps count.
  const int steps = r.run([&backend] { set_op_timing(backend, true); });
  PerStep out;
  out.ops = op_times(backend);
  set_op_timing(backend, false);
  for (CudaOpTime& t : out.ops) {
    t.ms /= steps;
    t.bytes /= steps;
    t.launches /= steps;
    out.step_ms += t.ms;
  }
  return out;
}

const CudaOpTime* find(const PerStep& p, const std::string& op) {
  for (const CudaOpTime& t : p.ops)
    if (t.op == op) return &t;
  return nullptr;
}

std::string cell(const CudaOpTime* t, double step_ms, double bandwidth_gbs) {
  if (!t) return "";
  char s[96];
  const int share = int(std::lround(100 * t->ms / step_ms));
  if (t->bytes > 0 && t->ms > 0) {
    const double gbs = double(t->bytes) / (t->ms * 1e6);
    std::snprintf(s, sizeof s, "%.1f (%d %%; %.0f GB/s, %d %% BW)", t->ms * 1000, share, gbs,
                  int(std::lround(100 * gbs / bandwidth_gbs)));
  } else {
    std::snprintf(s, sizeof s, "%.1f (%d %%)", t->ms * 1000, share);
  }
  return s;
}

}  // namespace

bool print_op_times(Backend& backend, const std::vector<OpTimedRun>& runs, double bandwidth_gbs) {
  if (!set_op_timing(backend, false)) {
    std::cout << "(--op-times: the " << backend.name() << " backend does not time operations)\n";
    return false;
  }
  std::vector<PerStep> per;
  for (const OpTimedRun& r : runs) per.push_back(time_ops(backend, r));
  std::cout << "\n| operation | launches/step |";
  std::string rule = "|---|---:|";
  for (const OpTimedRun& r : runs) std::cout << " " << r.label << ": µs/step (share; GB/s, % of BW) |", rule += "---:|";
  std::cout << "\n" << rule << "\n";
  // Every operation any configuration ran (the cut only where a policy evicts), in order of first use.
  std::vector<CudaOpTime> rows;
  for (const PerStep& p : per)
    for (const CudaOpTime& t : p.ops)
      if (std::none_of(rows.begin(), rows.end(), [&t](const CudaOpTime& r) { return r.op == t.op; })) rows.push_back(t);
  for (const CudaOpTime& op : rows) {
    std::cout << "| " << op.op << " | " << op.launches << " |";
    for (const PerStep& p : per) std::cout << " " << cell(find(p, op.op), p.step_ms, bandwidth_gbs) << " |";
    std::cout << "\n";
  }
  std::cout << "| **step (sum)** | |";
  for (const PerStep& p : per) std::cout << " " << p.step_ms * 1000 << " |";
  std::cout << "\n\n" << std::flush;
  return true;
}

}  // namespace h2o
