// h2o-bench: decode speed per backend, model and policy — a benchmark that
// prints a table, never a timed test. For each model and context it fills
// every policy's cache with `context` tokens, then times decode steps (one
// token per session per forward pass), alone and, with --batched, all
// policies in one pass. Decode reads every weight and the cached keys and
// values once per step, so each row also says how many bytes a step moved,
// at what rate, and what share that is of the memory bandwidth the backend
// measures for the same working set. --sessions 1,2,3,4 instead times steps
// of that many sessions batched (the app's panes side by side), each against
// one session's step: a batched step reads the weights once for all of them,
// so where decode is bound by memory it should cost little more than one.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "app/bench_op_times.h"
#include "app/cli_flags.h"
#include "app/load_progress.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/system_limits.h"
#include "core/runtime/kv_memory_account.h"

using namespace h2o;

namespace {


struct Options {
  BackendOptions backend;
  std::string shapes = "stories15M,stories110M", model, dtype = "f32";
  std::string policies = "full,streaming,h2o,tova", contexts = "256", slacks = "0", kv_bits, kv_sweep, sessions;
  int budget = 64, sinks = 4, tokens = 128, repeats = 3, prefill_chunk = 64;
  int kv_group = KvPrecision{}.group, kv_residual = KvPrecision{}.residual;  // G and R below 16 bits
  bool kv_shape_given = false;  // either was: else they are shaped for each model (SEMANTICS)
  bool batched = false, op_times = false;
};

// What one timed configuration did.
struct Timing {
  double ms_per_step = 0;
  int64_t bytes_per_step = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Tokens of a stream: any ids the vocabulary holds, the same every run.
int token_at(int64_t i, int vocab) { return int((i * 37 + 11) % vocab); }

// Fresh caches, one per policy, filled with `context` tokens.
std::vector<std::unique_ptr<SessionCache>> filled_caches(Backend& backend, const std::vector<PolicyConfig>& policies,
                                                         const Options& o, int context) {
  const int vocab = backend.model().config.vocab_size;
  std::vector<std::unique_ptr<SessionCache>> caches;
  for (const PolicyConfig& p : policies) caches.push_back(backend.new_cache(p));
  for (int done = 0; done < context;) {
    const int n = std::min(o.prefill_chunk, context - done);
    std::vector<int> chunk;
    for (int i = 0; i < n; ++i) chunk.push_back(token_at(done + i, vocab));
    std::vector<ForwardItem> items(caches.size());
    for (size_t i = 0; i < caches.size(); ++i) items[i].cache = caches[i].get(), items[i].tokens = chunk;
    backend.forward(items);
    done += n;
  }
  return caches;
}

int64_t live_bytes(const std::vector<std::unique_ptr<SessionCache>>& caches) {
  int64_t bytes = 0;
  for (const auto& c : caches) bytes += c->live_bytes();
  return bytes;
}

// Times `repeats` windows of `tokens` decode steps with all caches in each
// forward pass. Every window starts from caches freshly filled with
// `context` tokens, as llama-bench starts each repetition afresh: each
// window times the same contexts (and reads as many cached keys and values)
// as every other. A step's bytes: the weights and the caches' mean size over
// the window.
// `before_steps`, where given, runs after each window's caches are filled.
Timing time_decode(Backend& backend, const std::vector<PolicyConfig>& policies, const Options& o, int context,
                   const std::function<void()>& before_steps = {}) {
  const int vocab = backend.model().config.vocab_size;
  const TokenChoice greedy;
  std::vector<double> windows;
  int64_t kv_bytes = 0;
  for (int rep = 0; rep < o.repeats; ++rep) {
    const auto caches = filled_caches(backend, policies, o, context);
    const int64_t kv_before = live_bytes(caches);
    if (before_steps) before_steps();
    std::vector<int> token(caches.size(), token_at(context, vocab)), next(caches.size());
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < o.tokens; ++t) {
      std::vector<ForwardItem> items(caches.size());
      for (size_t i = 0; i < caches.size(); ++i) {
        items[i].cache = caches[i].get();
        items[i].tokens = std::span<const int>(&token[i], 1);
        items[i].choose = &greedy;
        items[i].chosen = &next[i];
      }
      backend.forward(items);
      token = next;
    }
    windows.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                      o.tokens);
    kv_bytes = (kv_before + live_bytes(caches)) / 2;
  }
  Timing t;
  t.ms_per_step = median(windows);
  t.bytes_per_step = backend.weight_bytes() + kv_bytes;
  return t;
}

std::string label_of(const std::vector<PolicyConfig>& policies) {
  std::string s;
  for (const PolicyConfig& p : policies) s += (s.empty() ? "" : " + ") + p.describe();
  return s;
}

void print_row(const std::string& backend, const std::string& model, const std::string& weights, int context,
               const std::vector<PolicyConfig>& policies, const Timing& t, double bandwidth, const std::string& extra) {
  const double gbs = double(t.bytes_per_step) / (t.ms_per_step * 1e6);
  char line[512];
  std::snprintf(line, sizeof line, "| %s | %s | %s | %d | %s | %zu | %.3f | %.1f | %s | %.1f | %s |%s\n", backend.c_str(),
                model.c_str(), weights.c_str(), context, label_of(policies).c_str(), policies.size(), t.ms_per_step,
                1000.0 / t.ms_per_step, format_mib(t.bytes_per_step).c_str(), gbs,
                std::isnan(bandwidth) ? "–" : (std::to_string(int(std::lround(100 * gbs / bandwidth))) + " %").c_str(),
                extra.c_str());
  std::cout << line << std::flush;
}

// --op-times: each policy alone and (with --batched) all together, one window each.
std::vector<OpTimedRun> op_timed_runs(Backend& backend, const std::vector<PolicyConfig>& policies, const Options& o,
                                      int context) {
  std::vector<std::vector<PolicyConfig>> sets;
  for (const PolicyConfig& p : policies) sets.push_back({p});
  if (o.batched && policies.size() > 1) sets.push_back(policies);
  Options once = o;
  once.repeats = 1;
  std::vector<OpTimedRun> runs;
  for (const auto& set : sets)
    runs.push_back({set.size() > 1 ? "batched" : set[0].describe(), [&backend, set, once, context](const auto& start) {
                      time_decode(backend, set, once, context, start);
                      return once.tokens;
                    }});
  return runs;
}

// --sessions: a step of each count of sessions batched (policies taken in
// turn), against one session's step; weights' GB/s and their share of the
// measured bandwidth. The counts take turns, one window each per repeat, so
// that a machine whose load drifts skews every count alike.
void print_sessions_rows(Backend& backend, const std::string& name, const std::string& weights,
                         const std::vector<PolicyConfig>& policies, const std::vector<int>& counts, const Options& o,
                         int context, double bandwidth) {
  Options once = o;
  once.repeats = 1;
  std::vector<std::vector<double>> windows(counts.size());
  for (int rep = 0; rep < o.repeats; ++rep)
    for (size_t c = 0; c < counts.size(); ++c) {
      std::vector<PolicyConfig> set;
      for (int k = 0; k < counts[c]; ++k) set.push_back(policies[size_t(k) % policies.size()]);
      windows[c].push_back(time_decode(backend, set, once, context).ms_per_step);
    }
  double one = NAN;
  for (size_t c = 0; c < counts.size(); ++c) {
    const double ms = median(windows[c]);
    if (counts[c] == 1) one = ms;
    const double gbs = double(backend.weight_bytes()) / (ms * 1e6);
    char ratio[32] = "–", share[32] = "–", line[512];
    if (!std::isnan(one)) std::snprintf(ratio, sizeof ratio, "%.2f×", ms / one);
    if (!std::isnan(bandwidth)) std::snprintf(share, sizeof share, "%ld %%", std::lround(100 * gbs / bandwidth));
    std::snprintf(line, sizeof line, "| %s | %s | %s | %d | %d | %d | %.3f | %s | %.1f | %.1f | %s |\n",
                  backend.name().c_str(), name.c_str(), weights.c_str(), o.backend.threads, context, counts[c], ms, ratio,
                  1000.0 / ms, gbs, share);
    std::cout << line << std::flush;
  }
}

// Before any cache is filled: the longest context's full caches (every
// session of a batched row at once) must fit this machine's memory.
void refuse_contexts_over_memory(const ModelConfig& config, const std::vector<int>& contexts, int tokens, int sessions) {
  const int longest = *std::max_element(contexts.begin(), contexts.end());
  check_kv_fits_memory(config, kv_cache_bytes(config, int64_t(longest) + tokens, false) * sessions, sessions, "--contexts",
                       "a context of " + std::to_string(longest) + " tokens");
}

// Each policy of --policies at each KV precision and slack (the full cache has no slack: once).
std::vector<PolicyConfig> policies_asked(const Options& o) {
  KvPrecision shape;  // --kv-group and --kv-residual, for the precisions below the backend's own
  shape.group = o.kv_group, shape.residual = o.kv_residual, shape.shape_given = o.kv_shape_given;
  const std::vector<KvPrecision> precisions = kv_precisions(o.kv_bits, o.kv_sweep, shape);
  PolicySettings settings;
  settings.budget = o.budget;
  settings.given["sinks"] = o.sinks;
  std::vector<PolicyConfig> policies;
  for (const std::string& name : split_list(o.policies))
    for (const KvPrecision& kv : precisions)
      for (const std::string& slack : split_list(o.slacks)) {
        settings.slack = std::atoi(slack.c_str());
        if (settings.slack < 0 || slack.find_first_not_of("0123456789") != std::string::npos)
          fail("--slacks", "each slack must be a whole number >= 0, got '" + slack + "'");
        settings.kv = kv;
        const PolicyConfig p = make_policy(parse_policy_entry(name, "--policies"), settings);
        if (p.evicts() || settings.slack == std::atoi(split_list(o.slacks).front().c_str())) policies.push_back(p);
      }
  if (policies.empty()) fail("--policies", "no policy given");
  return policies;
}

// Each policy alone and, with --batched, all of them in one pass.
void print_policy_rows(Backend& backend, const std::string& name, const std::string& weights,
                       const std::vector<PolicyConfig>& policies, const Options& o, int context, double bandwidth) {
  std::vector<double> alone;
  for (const PolicyConfig& p : policies) {
    const Timing t = time_decode(backend, {p}, o, context);
    alone.push_back(t.ms_per_step);
    print_row(backend.name(), name, weights, context, {p}, t, bandwidth, " |");
  }
  if (o.batched && policies.size() > 1) {
    const Timing t = time_decode(backend, policies, o, context);
    double mean_alone = 0;
    for (double ms : alone) mean_alone += ms / double(alone.size());
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, " %.2f× |", t.ms_per_step / mean_alone);
    print_row(backend.name(), name, weights, context, policies, t, bandwidth, ratio);
  }
}

int run(const Options& o) {
  std::vector<std::string> models;
  if (!o.model.empty()) models.push_back(o.model);
  else
    for (const std::string& shape : flag_list(o.shapes, "--shapes", "shape"))
      for (const std::string& dtype : flag_list(o.dtype, "--dtype", "weight type")) models.push_back("synthetic:" + shape + ":dtype=" + dtype);
  const std::vector<int> contexts = parse_flag_ints(o.contexts, "--contexts", "context", 1, kMaxCacheTokens);
  const std::vector<int> sessions =
      o.sessions.empty() ? std::vector<int>{} : parse_flag_ints(o.sessions, "--sessions", "session count", 1, 64);
  const std::vector<PolicyConfig> policies_given = policies_asked(o);
  const int most_sessions = !sessions.empty() ? *std::max_element(sessions.begin(), sessions.end())
                            : o.batched       ? int(policies_given.size())
                                              : 1;

  bool header = false;  // printed once the first model's contexts are known to fit
  for (const std::string& path : models) {
    const auto model = cli::load_model_with_progress(path);
    auto backend = make_backend(model, o.backend);
    std::vector<PolicyConfig> policies = policies_given;  // G and R shaped for this model, as the engine shapes them
    for (PolicyConfig& p : policies) p.shape_kv(model->config.head_dim());
    const std::string name = model->path.substr(model->path.find_last_of('/') + 1);  // npos + 1 = 0: the whole path
    std::string weights = model->weight_types();  // "q4_k_m": what the file holds (the backend's description says what it keeps)
    std::transform(weights.begin(), weights.end(), weights.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    refuse_contexts_over_memory(model->config, contexts, o.tokens, most_sessions);
    if (!std::exchange(header, true))
      std::cout << (sessions.empty()
                        ? "| backend | model | weights | context | policies | sessions | ms/step | tok/s per session | "
                          "bytes/step | GB/s | % of measured BW | batched / alone |\n"
                          "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n"
                        : "| backend | model | weights | threads | context | sessions | ms/step | × one session | "
                          "tok/s per session | weights GB/s | % of measured BW |\n"
                          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int context : contexts) {
      // The working set: every weight and the longest cache at this context.
      const int64_t full_kv = int64_t(model->config.n_layers) * model->config.kv_dim() * 2 * 4 * (context + o.tokens);
      const double bandwidth = backend->measure_bandwidth(backend->weight_bytes() + full_kv);
      if (!sessions.empty()) print_sessions_rows(*backend, name, weights, policies, sessions, o, context, bandwidth);
      else print_policy_rows(*backend, name, weights, policies, o, context, bandwidth);
      if (o.op_times) print_op_times(*backend, op_timed_runs(*backend, policies, o, context), bandwidth);
    }
    std::cerr << "h2o-bench: " << backend->describe() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decode speed per backend, model and policy: a table with bytes moved and % of measured bandwidth"};
  Options o;
  o.backend.threads = 2;
  cli::add_table_flag(&app, "backend", o.backend.kind, kBench);
  cli::add_table_flag(&app, "precision", o.backend.precision, kBench);
  cli::add_table_flag(&app, "threads", o.backend.threads, kBench);
  app.add_option("--shapes", o.shapes, "synthetic shapes, comma-separated (random weights at real shapes)");
  app.add_option("--dtype", o.dtype, "synthetic weights' types, comma-separated: " + type_mix_names());
  app.add_option("--model", o.model, "a model file instead of synthetic shapes");
  app.add_option("--policies", o.policies, "comma-separated, any of: " + policy_names());
  app.add_option("--contexts", o.contexts, "tokens in each cache before timing, comma-separated");
  cli::add_table_flag(&app, "kv-bits", o.kv_bits, kBench);
  app.add_option("--kv-sweep", o.kv_sweep,
                 "KV precisions, comma-separated: each policy at each of 32 (the backend's own type), 16, 8, 4, 2 or "
                 "k<K>v<V>; instead of --kv-bits");
  cli::add_table_flag(&app, "kv-group", o.kv_group, kBench);
  cli::add_table_flag(&app, "kv-residual", o.kv_residual, kBench);
  cli::add_table_flag(&app, "budget", o.budget, kBench);
  cli::add_table_flag(&app, "sinks", o.sinks, kBench);
  app.add_option("--slacks", o.slacks,
                 "comma-separated: each evicting policy at each slack (the cache grows to budget + slack, then is cut "
                 "back to budget)");
  cli::add_whole_flag(&app, "tokens", o.tokens, 1, 1 << 20, "decode steps per timed window");
  cli::add_whole_flag(&app, "repeats", o.repeats, 1, 1000, "timed windows; the median is reported");
  cli::add_whole_flag(&app, "prefill-chunk", o.prefill_chunk, 1, 1 << 20, "tokens per forward pass while filling the caches");
  app.add_flag("--batched", o.batched, "also time every policy in one pass (weights read once) and its ratio to alone");
  app.add_option("--sessions", o.sessions,
                 "session counts, comma-separated (e.g. 1,2,3,4): instead of the policies' rows, a step of each count "
                 "batched (policies in turn) and its time against one session's");
  app.add_flag("--op-times", o.op_times,
               "CUDA: after each context's rows, a table of device time per operation (eager passes, one window each)");
  cli::one_line_flag_errors(app, "h2o-bench");
  CLI11_PARSE(app, argc, argv);
  o.kv_shape_given = app.count("--kv-group") + app.count("--kv-residual") > 0;
  try {
    // The default of 2 is the CPU backend's; a device backend gets none unless asked (cuda-sim refuses more than 1).
    if (o.backend.kind != "cpu" && app.count("--threads") == 0) o.backend.threads = 0;
    if (o.op_times && o.backend.kind == "cuda-sim")
      fail("--op-times", "cuda-sim runs the kernels on the CPU through the emulation: its times say nothing of a GPU "
                         "(use --backend cuda on one)");
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "h2o-bench: " << e.what() << "\n";
    return 1;
  }
}
