#include "app/eval_table.h"

#include <iomanip>
#include <iostream>

#include "app/policy_rows.h"
#include "core/base/format.h"
#include "core/base/process_memory.h"
#include "core/studio/run_log.h"

namespace h2o::cli {
namespace {

// The figures that belong to no one session: the sessions run side by side in
// one process and book their KV memory in one account, so the process's peak
// and the account's cover them all together.
void print_shared_memory(const Engine& engine) {
  const int64_t rss = process_peak_rss_bytes();
  std::cout << "Process peak RSS " << (rss > 0 ? format_mib(rss) : std::string("unknown")) << " (the "
            << engine.sessions().size()
            << " sessions side by side in one process, weights included); KV account peak "
            << format_mib(engine.backend().peak_kv_bytes()) << " (all sessions' caches together).\n\n";
}

}  // namespace

void print_eval_table(const Engine& engine, const ScoringMeter& meter, const std::vector<std::string>& sized_by,
                      const std::string& model_path, std::ostream& csv) {
  const std::ios::fmtflags flags = std::cout.flags();
  const std::streamsize precision = std::cout.precision();
  print_shared_memory(engine);
  csv << "model,tokens,policy,budget,sized_by,perplexity,top1_agreement,mean_kl_vs_full,tokens_per_s,"
         "peak_kv_live_bytes,peak_kv_allocated_bytes,process_peak_rss_bytes,kv_precision\n";
  std::cout << "| policy | budget | KV | sized by | perplexity | top-1 agreement | KL(full‖policy) | tokens/s | peak KV |\n"
               "|---|---:|---|---|---:|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < engine.sessions().size(); ++i) {
    const auto& s = engine.sessions()[i];
    const auto& t = s->totals();
    const SessionMeasure m = meter.total(i);
    const PolicyConfig& p = s->policy();
    const std::string budget = budget_column(p);
    const std::string kv = kv_column(p, engine.backend().name());
    std::cout << "| " << p.describe() << " | " << budget << " | " << kv << " | " << sized_by[i] << " | " << std::fixed
              << std::setprecision(3) << t.perplexity() << " | " << std::setprecision(4) << t.agreement() << " | "
              << std::setprecision(4) << t.mean_kl() << " | " << std::setprecision(0) << m.tokens_per_s() << " | "
              << format_mib(m.peak_kv_live_bytes) << " |\n";
    csv << csv_field(model_path) << ',' << t.scored << ',' << csv_field(p.describe()) << ',' << budget << ','
        << csv_field(sized_by[i]) << ',' << t.perplexity() << ',' << t.agreement() << ',' << t.mean_kl() << ','
        << m.tokens_per_s() << ',' << m.peak_kv_live_bytes << ',' << m.peak_kv_allocated_bytes << ','
        << m.process_peak_rss_bytes << ',' << kv << '\n';
  }
  std::cout.flags(flags);
  std::cout.precision(precision);
}

}  // namespace h2o::cli
