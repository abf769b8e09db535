#include "app/needle_report.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <map>

#include "app/policy_rows.h"
#include "core/studio/run_log.h"

#ifdef H2O_WITH_PLOT
#include "app/grid_plot.h"
#endif

namespace h2o::cli {
namespace {

double survival(const NeedleOutcome& o, bool at_answer) {
  return survival_fraction(at_answer ? o.held_answer : o.held_question, o.needle_end - o.needle_begin);
}

// The columns every row of both CSVs starts with.
std::string row_key(const NeedleReport& r, const NeedleOutcome& o) {
  const PolicyConfig& p = r.spec.policies[o.policy];
  return std::to_string(o.length) + ',' + std::to_string(o.depth) + ',' + csv_field(p.describe()) + ',' +
         budget_column(p) + ',' + kv_column(p, r.backend);
}

}  // namespace

void write_needle_csv(const NeedleReport& r, std::ostream& csv) {
  csv << "length,depth,policy,budget,kv_precision,needle_begin,needle_end,survival_question,survival_answer,"
         "answer_nll,answer_tokens,exact,answer_nll_without\n";
  csv << std::setprecision(10);
  for (const NeedleOutcome& o : r.grid.outcomes)
    csv << row_key(r, o) << ',' << o.needle_begin << ',' << o.needle_end << ',' << survival(o, false) << ','
        << survival(o, true) << ',' << o.recall.nll << ',' << o.recall.tokens << ',' << (o.recall.exact ? 1 : 0) << ','
        << o.without.nll << '\n';
}

void write_needle_heads_csv(const NeedleReport& r, std::ostream& csv) {
  csv << "length,depth,policy,budget,kv_precision,layer,kv_head,needle_tokens,held_question,held_answer\n";
  const int kv_heads = r.model.n_kv_heads;
  for (const NeedleOutcome& o : r.grid.outcomes) {
    const std::string key = row_key(r, o);
    for (size_t h = 0; h < o.held_question.size(); ++h)
      csv << key << ',' << h / size_t(kv_heads) << ',' << h % size_t(kv_heads) << ',' << o.needle_end - o.needle_begin
          << ',' << o.held_question[h] << ',' << o.held_answer[h] << '\n';
  }
}

void print_needle_table(const NeedleReport& r, std::ostream& out) {
  struct Sum {
    double survival_question = 0, survival_answer = 0, exact = 0, nll = 0, without = 0;
    int cells = 0;
  };
  std::map<std::pair<size_t, int64_t>, Sum> sums;  // by (session, length)
  for (const NeedleOutcome& o : r.grid.outcomes) {
    Sum& s = sums[{o.policy, o.length}];
    s.survival_question += survival(o, false);
    s.survival_answer += survival(o, true);
    s.exact += o.recall.exact ? 1 : 0;
    s.nll += o.recall.nll;
    s.without += o.without.nll;
    ++s.cells;
  }
  const std::ios::fmtflags flags = out.flags();
  out << "| policy | budget | KV | length | survival at the question | at the answer | exact | answer NLL | "
         "NLL without the needle |\n|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [key, s] : sums) {
    const PolicyConfig& p = r.spec.policies[key.first];
    const double n = s.cells;
    out << "| " << p.describe() << " | " << budget_column(p) << " | " << kv_column(p, r.backend) << " | " << key.second
        << (r.model.max_seq_len > 0 && key.second > r.model.max_seq_len ? " (past the trained context)" : "") << " | "
        << std::fixed << std::setprecision(3) << s.survival_question / n << " | " << s.survival_answer / n << " | "
        << std::setprecision(2) << s.exact / n << " | " << std::setprecision(3) << s.nll / n << " | " << s.without / n
        << " |\n";
  }
  out.flags(flags);
}

#ifdef H2O_WITH_PLOT
namespace {

std::string file_stem(const NeedleReport& r, size_t session) {
  const PolicyConfig& p = r.spec.policies[session];
  char index[16];
  std::snprintf(index, sizeof index, "%02zu", session);
  std::string stem = "needle-" + std::string(index) + "-" + std::string(p.name());
  if (p.evicts()) stem += "-b" + std::to_string(p.budget());
  if (!p.kv.native()) stem += "-k" + std::to_string(p.kv.key_bits) + "v" + std::to_string(p.kv.value_bits);
  return stem;
}

// A depth x length grid of one session: `value` of each cell, the trained context marked.
GridPlot depth_by_length(const NeedleReport& r, size_t session, double (*value)(const NeedleOutcome&)) {
  GridPlot g;
  g.x_title = "context length (tokens)";
  g.y_title = "needle depth (%)";
  for (int64_t length : r.spec.lengths) {
    g.columns.push_back(std::to_string(length));
    if (r.model.max_seq_len > 0 && length <= r.model.max_seq_len) g.mark_after_column = int(g.columns.size()) - 1;
  }
  if (g.mark_after_column == int(r.spec.lengths.size()) - 1) g.mark_after_column = -1;  // every length inside it
  g.mark_label = "trained context " + std::to_string(r.model.max_seq_len);
  for (int depth : r.spec.depths) g.rows.push_back(std::to_string(depth));
  g.values.assign(g.rows.size() * g.columns.size(), std::numeric_limits<double>::quiet_NaN());
  for (const NeedleOutcome& o : r.grid.outcomes) {
    if (o.policy != session) continue;
    size_t col = 0, row = 0;
    while (r.spec.lengths[col] != o.length) ++col;
    while (r.spec.depths[row] != o.depth) ++row;
    g.values[row * g.columns.size() + col] = value(o);
  }
  return g;
}

// Each (layer, KV head)'s mean fraction of the needle held at the question, over every cell.
GridPlot heads_grid(const NeedleReport& r, size_t session) {
  GridPlot g;
  g.x_title = "KV head";
  g.y_title = "layer";
  g.value_title = "fraction of the needle held at the question";
  const int layers = r.model.n_layers, kv_heads = r.model.n_kv_heads;
  for (int h = 0; h < kv_heads; ++h) g.columns.push_back(std::to_string(h));
  for (int l = 0; l < layers; ++l) g.rows.push_back(std::to_string(l));
  g.values.assign(size_t(layers) * size_t(kv_heads), 0);
  int cells = 0;
  for (const NeedleOutcome& o : r.grid.outcomes) {
    if (o.policy != session) continue;
    ++cells;
    for (size_t h = 0; h < o.held_question.size() && h < g.values.size(); ++h)
      g.values[h] += double(o.held_question[h]) / double(o.needle_end - o.needle_begin);
  }
  for (double& v : g.values) v = cells ? v / cells : std::numeric_limits<double>::quiet_NaN();
  return g;
}

}  // namespace

std::vector<NeedlePlot> needle_plots(const NeedleReport& r) {
  double nll_hi = 0;
  for (const NeedleOutcome& o : r.grid.outcomes) nll_hi = std::max(nll_hi, o.recall.nll);
  std::vector<NeedlePlot> out;
  for (size_t s = 0; s < r.spec.policies.size(); ++s) {
    const std::string name = r.spec.policies[s].describe(), stem = file_stem(r, s);
    GridPlot survived = depth_by_length(r, s, [](const NeedleOutcome& o) { return survival(o, false); });
    survived.title = name + ": needle held at the question";
    survived.value_title = "fraction held (all layers and KV heads)";
    GridPlot recall = depth_by_length(r, s, [](const NeedleOutcome& o) { return o.recall.nll; });
    recall.title = name + ": answer NLL (nats; lower recalls better)";
    recall.value_title = "answer NLL (nats)";
    recall.hi = nll_hi;  // one scale for every session, so their plots compare
    GridPlot heads = heads_grid(r, s);
    heads.title = name + ": held per layer and KV head";
    for (const auto& [plot, kind] : {std::pair{&survived, "survival"}, {&recall, "recall"}, {&heads, "heads"}})
      out.push_back({stem + "-" + kind, grid_png(*plot), grid_pdf(*plot)});
  }
  return out;
}
#else
std::vector<NeedlePlot> needle_plots(const NeedleReport&) { return {}; }
#endif

}  // namespace h2o::cli
